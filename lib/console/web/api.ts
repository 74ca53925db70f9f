/**
 * The console's calls to the API it is served with (same origin, relative paths, so it works behind any path
 * prefix). The bearer token, if the user signed in, lives in this tab's sessionStorage only and goes in the
 * Authorization header: never in a URL, never in localStorage.
 */
const TOKEN_KEY = 'hami-explain.token';

export function token(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function signIn(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** An answer that is not 2xx: the Kubernetes Status' code and message, shown as text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** The answer's body as sent (a 404 may carry the debugging decision tree). */
    readonly body?: unknown,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export async function getJson<T>(path: string): Promise<T> {
  const auth = token();
  let res: Response;
  try {
    res = await fetch(path, { headers: { accept: 'application/json', ...(auth !== undefined ? { authorization: `Bearer ${auth}` } : {}) }, cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'Unreachable', 'the console cannot reach its server');
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (res.ok && body !== undefined) return body as T;
  const status = body as { message?: unknown; reason?: unknown } | undefined;
  throw new ApiError(
    res.status,
    typeof status?.reason === 'string' ? status.reason : res.statusText,
    typeof status?.message === 'string' ? status.message : `the server answered ${res.status}`,
    body,
  );
}

export interface ListBody<T> {
  readonly metadata: { readonly continue?: string };
  readonly items: readonly T[];
}

/** Every page of a list (Kubernetes style: limit and continue), up to `cap` items. */
export async function listAll<T>(path: string, cap: number, limit = 500): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page: ListBody<T> = await getJson(`${path}?limit=${limit}${next !== undefined ? `&continue=${encodeURIComponent(next)}` : ''}`);
    items.push(...page.items);
    next = page.metadata.continue;
  } while (next !== undefined && items.length < cap);
  return { items, truncated: next !== undefined };
}
