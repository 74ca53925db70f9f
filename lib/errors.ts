/**
 * Domain errors. Adapters translate SDK failures into these; `lib/http/respond.ts` is the one place that
 * maps them to HTTP. Only 4xx messages are shown to callers.
 */
export abstract class DomainError extends Error {
  abstract readonly status: number;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The caller sent something we cannot use; the message says what and is safe to show. */
export class BadRequestError extends DomainError {
  readonly status = 400;
}

export class UnauthorizedError extends DomainError {
  readonly status = 401;
}

export class NotFoundError extends DomainError {
  readonly status = 404;
  constructor(
    message: string,
    readonly kind: string,
    readonly resourceName: string,
  ) {
    super(message);
  }
}

export class PayloadTooLargeError extends DomainError {
  readonly status = 413;
}

/** The store could not be reached or failed; the caller may retry. Details stay in the logs. */
export class StoreUnavailableError extends DomainError {
  readonly status = 503;
}

/** Optimistic concurrency lost too many times in a row; the caller may retry. */
export class ContentionError extends DomainError {
  readonly status = 503;
}

/** The store refused a write as too large (item or key size): permanent, and the message says what is too large. */
export class StoreRejectedError extends DomainError {
  readonly status = 422;
}

/** A node whose stored state would exceed the bound of one item: refused with the figures, never sent to the store. */
export class NodeItemTooLargeError extends StoreRejectedError {
  constructor(
    readonly node: string,
    readonly bytes: number,
    readonly limitBytes: number,
  ) {
    super(`the stored state of node ${node} would be ${Math.ceil(bytes / 1024)} KB, above the ${limitBytes / 1024} KB bound of one node's item`);
  }
}

/** The store failed in a way retrying cannot fix (missing table or permission, a request we built wrong): details stay in the logs. */
export class StoreFaultError extends DomainError {
  readonly status = 500;
}

/** A stored item does not match its schema: a bug or a manual edit, never the caller's fault. */
export class CorruptItemError extends DomainError {
  readonly status = 500;
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The message of anything thrown: an Error's message, anything else as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
