/**
 * The one place errors become HTTP answers. Extender routes always answer 200 with `Error` set
 * (kube-scheduler discards non-200 bodies); other routes answer Kubernetes-style Status bodies.
 * 4xx messages explain; 5xx messages say only that the caller may retry, with a reference for the logs.
 */
import { DomainError, NotFoundError } from '../errors';

export interface HttpResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export type RouteKind = 'extender' | 'api';

/**
 * Headers of every answer the control plane's routes give (docs/api.md §2): browsers never sniff an answer into
 * another type, and nothing on the way keeps a copy (answers name pods and may carry a bearer-protected view).
 */
export const ANSWER_HEADERS = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' } as const;

const JSON_HEADERS = { 'content-type': 'application/json', ...ANSWER_HEADERS } as const;

export function json(statusCode: number, payload: unknown): HttpResponse {
  return { statusCode, headers: JSON_HEADERS, body: JSON.stringify(payload) };
}

/** A plain-text answer (`/healthz`), with the same headers as JSON ones. */
export function text(statusCode: number, body: string): HttpResponse {
  return { statusCode, headers: { 'content-type': 'text/plain', ...ANSWER_HEADERS }, body };
}

/** Kubernetes `Status` (meta/v1), as kubectl and client libraries expect from an API path. */
export function statusBody(code: number, reason: string, message: string, details?: { name: string; kind: string }) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  413: 'RequestEntityTooLarge',
  422: 'Invalid',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** Whether the error's message may be shown to the caller. */
export function isExposed(err: unknown): err is DomainError {
  return err instanceof DomainError && err.status < 500;
}

export function errorResponse(err: unknown, kind: RouteKind, reference: string): HttpResponse {
  const status = err instanceof DomainError ? err.status : 500;
  const message = isExposed(err)
    ? err.message
    : status === 503
      ? `scheduler control plane temporarily unavailable, retry (ref ${reference})`
      : `internal error in the scheduler control plane (ref ${reference})`;
  if (kind === 'extender') return json(200, { Error: message });
  const details = err instanceof NotFoundError ? { name: err.resourceName, kind: err.kind } : undefined;
  return json(status, statusBody(status, REASONS[status] ?? 'InternalError', message, details));
}
