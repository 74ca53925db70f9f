/** The local processes' shutdown (`npm start`, `npm run dynamodb-local`): Ctrl-C or SIGTERM closes, then the process exits 0, or 1 if closing failed. */
export function exitOnSignals(close: () => Promise<void>): void {
  const stop = (): void => {
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
