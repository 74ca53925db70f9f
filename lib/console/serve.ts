/**
 * Serving the web console (docs/api.md §11): its page, script and stylesheet, with headers that keep cluster data
 * inert: a Content-Security-Policy that runs this script only (no inline script or style, no other origin), no
 * framing, no sniffing, no referrer. The assets hold no data; the API routes they call keep their own rules.
 */
import { assets } from 'virtual:console-assets';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleResponse {
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const byPath = new Map(assets.map((asset) => [asset.path, asset]));

/** The console's answer to `GET path`, or undefined when the path is not one of its assets. */
export function consoleAsset(method: string | undefined, path: string): ConsoleResponse | undefined {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  const asset = byPath.get(path === '/index.html' ? '/' : path);
  if (asset === undefined) return undefined;
  return {
    statusCode: 200,
    headers: {
      'content-type': asset.contentType,
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    },
    body: method === 'HEAD' ? '' : asset.body,
  };
}

/** Bytes of every asset, as served (the benchmark reports them). */
export function consoleAssetBytes(): number {
  return assets.reduce((sum, asset) => sum + Buffer.byteLength(asset.body), 0);
}
