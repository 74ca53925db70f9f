/** hami-diag's errors: each prints as one line and exits with code 2. Messages never hold the token. */
export class CliError extends Error {
  readonly exitCode: number = 2;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad command line. */
export class UsageError extends CliError {}

/** No connection to the scheduler API (refused, unknown host, timeout). */
export class ApiUnreachableError extends CliError {}

/** The API answered 401 or 403. */
export class ApiAuthError extends CliError {}

/** The API answered something hami-diag cannot use (5xx, not JSON, wrong shape). */
export class ApiResponseError extends CliError {}
