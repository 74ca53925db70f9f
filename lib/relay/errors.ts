/** Typed failures of the relay. Each carries what a caller needs to decide, plus the `cause`. */
import { DomainError } from '../errors';

/** Environment configuration is invalid; `problems` lists every bad key at once. */
export class RelayConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid relay configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'RelayConfigError';
  }
}

/** The control plane could not be reached, answered too late, or answered something unusable. */
export class ControlPlaneError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ControlPlaneError';
  }
}

/** The control plane did not answer within the deadline. */
export class ControlPlaneTimeoutError extends ControlPlaneError {
  constructor(path: string, deadlineMs: number, options?: ErrorOptions) {
    super(`control plane did not answer ${path} within ${deadlineMs}ms`, path, undefined, options);
    this.name = 'ControlPlaneTimeoutError';
  }
}

/** A Kubernetes API write the Effects required failed (patch or binding). */
export class KubeWriteError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'KubeWriteError';
  }
}

/** A continue token sealed under a key this relay no longer holds: the caller starts the listing again (410 Expired, as Kubernetes answers). */
export class PageTokenExpiredError extends DomainError {
  readonly status = 410;
}
