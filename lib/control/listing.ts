/**
 * Listing pages, Kubernetes style (docs/api.md §10): `limit` and an opaque `continue` token that says where the
 * next page starts. The token wraps a position (a node name, or the record store's own position text) with the
 * list it belongs to, so a token is refused by any other list. It names no namespace: a namespace's list is marked
 * as one, and the store refuses a position of another namespace (parsePosition in lib/store/recordStore.ts). The
 * relay seals these tokens into its own before users see them (lib/relay/pageTokens.ts). Pure.
 */
import { BadRequestError } from '../errors';

/** Items per page when the caller names no limit, and the most a caller may ask for. */
export const DEFAULT_LIST_LIMIT = 500;
export const MAX_LIST_LIMIT = 1000;
/** A page stops growing past this many bytes of JSON (API Gateway and Lambda answer at most 6 MB). */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;

export type ListKind = 'nodes' | 'schedulerlogs';

interface Token {
  readonly v: 1;
  readonly k: ListKind;
  /** `ns` for a namespace's list; '' for nodes and for every namespace. */
  readonly s: '' | 'ns';
  readonly p: string;
}

const scopeMark = (scope: string): Token['s'] => (scope === '' ? '' : 'ns');

export function encodeContinue(kind: ListKind, scope: string, position: string): string {
  const token: Token = { v: 1, k: kind, s: scopeMark(scope), p: position };
  return Buffer.from(JSON.stringify(token), 'utf8').toString('base64url');
}

/** The position a token carries, if it was issued for this list; a BadRequestError says why not. */
export function decodeContinue(token: string, kind: ListKind, scope: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new BadRequestError('continue token is not valid: pass the metadata.continue of the previous page unchanged');
  }
  const t = parsed as Partial<Token> | null;
  if (t === null || typeof t !== 'object' || t.v !== 1 || typeof t.p !== 'string' || typeof t.s !== 'string') {
    throw new BadRequestError('continue token is not valid: pass the metadata.continue of the previous page unchanged');
  }
  if (t.k !== kind || t.s !== scopeMark(scope)) throw new BadRequestError('continue token belongs to another list');
  return t.p;
}

/** Kubernetes' List shape. `remainingItemCount` only where the count is known. */
export interface ListBody<T> {
  readonly kind: string;
  readonly apiVersion: 'v1';
  readonly metadata: { readonly continue?: string; readonly remainingItemCount?: number };
  readonly items: readonly T[];
}
