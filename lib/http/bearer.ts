/**
 * The bearer credentials of an `Authorization` header (RFC 6750 §2.1): the auth scheme is matched case-insensitively,
 * as RFC 7235 §2.1 says (`Bearer`, `bearer`, `BEARER`), one or more spaces follow it, then the token. The token's
 * characters are not narrowed to RFC 6750's token68: `HAMI_API_TOKEN` may hold any, and is compared as given.
 */
const BEARER = /^bearer +(.+)$/i;

/** The token an `Authorization` header presents, or undefined when it presents none. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  return BEARER.exec(header)?.[1];
}
