/**
 * Path segments as every server of ours reads them (the control plane's routes, the relay's user port).
 */
import { BadRequestError } from '../errors';

/** A percent-encoded path segment, or a 400 saying it is not one (`decodeURIComponent` throws a bare URIError). */
export function decodePathSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new BadRequestError(`path segment ${JSON.stringify(raw)} is not valid percent-encoding`);
  }
}
