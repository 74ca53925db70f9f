/**
 * The admission webhook's HTTPS listener (CONTRACT section 7a): POST /webhook answers AdmissionReview v1 with
 * the pure decision of lib/admission/review.ts, over the registered cards the Node informer has seen. TLS comes
 * from the relay's own CA (tls/webhookCertificates.ts) or from files a cert-manager Certificate mounts; either
 * way it is re-read every check interval and swapped into the running server without a restart.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { CardCapacity } from '../admission/cards';
import { reviewAdmission, type AdmissionSettings } from '../admission/review';
import type { AppLogger } from '../powertools';
import { backoffMs, realDelay, type DelayFn } from './delay';
import { closeServer, readBody, send } from './server';
import type { ServingMaterial } from './tls/webhookCertificates';

export const WEBHOOK_PATH = '/webhook';

/** Where the serving certificate comes from; called once per check interval. */
export type ServingSource = () => Promise<ServingMaterial>;

/** cert-manager mode: the Secret of a Certificate, mounted as files (tls.crt, tls.key, ca.crt). */
export function filesSource(dir: string): ServingSource {
  return async () => {
    const [certPem, keyPem, caBundlePem] = await Promise.all([
      readFile(join(dir, 'tls.crt'), 'utf8'),
      readFile(join(dir, 'tls.key'), 'utf8'),
      readFile(join(dir, 'ca.crt'), 'utf8').catch(() => ''),
    ]);
    return { certPem, keyPem, caBundlePem };
  };
}

export interface WebhookOptions {
  readonly host: string;
  readonly port: number;
  readonly source: ServingSource;
  readonly admission: AdmissionSettings;
  /** Undefined until the Node informer has listed: no warnings are given from an empty view. */
  readonly capacity: () => CardCapacity | undefined;
  readonly logger: AppLogger;
  readonly checkIntervalMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly delay?: DelayFn;
}

export interface RunningWebhook {
  /** Resolves with the listener's URL once a certificate was obtained and the server listens. */
  ready(): Promise<string>;
  /** The certificate currently served. */
  serving(): ServingMaterial | undefined;
  close(): Promise<void>;
}

function handler(opts: WebhookOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'https://relay.invalid');
    if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
    if (req.method !== 'POST' || url.pathname !== WEBHOOK_PATH) return send(res, 404, { message: `no route for ${req.method ?? 'GET'} ${url.pathname}` });
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return send(res, 400, { message: `request body is not JSON: ${err instanceof Error ? err.message : String(err)}` });
    }
    const outcome = reviewAdmission(body, opts.admission, opts.capacity());
    if (outcome.kind === 'badRequest') {
      opts.logger.warn('AdmissionReviewRejected', { error: outcome.message });
      return send(res, 400, { message: outcome.message });
    }
    const request = (body as { request: { namespace?: string; name?: string; object?: { metadata?: { name?: string; generateName?: string } } } }).request;
    const d = outcome.decision;
    opts.logger.info('AdmissionReviewed', {
      namespace: request.namespace,
      pod: request.name ?? request.object?.metadata?.name ?? request.object?.metadata?.generateName,
      allowed: d.allowed,
      ...(d.allowed ? { patchOperations: d.patch.length, warnings: d.warnings } : { code: d.code, reason: d.message }),
    });
    return send(res, 200, outcome.review);
  };
}

/**
 * Obtains a certificate (retrying with backoff until one comes), then listens; every check interval it asks the
 * source again and swaps a changed certificate into the server. The extender never waits for any of this.
 */
export function startWebhook(opts: WebhookOptions): RunningWebhook {
  const delay = opts.delay ?? realDelay;
  const stopping = new AbortController();
  let server: Server | undefined;
  let current: ServingMaterial | undefined;
  let resolveReady: (url: string) => void = () => undefined;
  let rejectReady: (err: Error) => void = () => undefined;
  const ready = new Promise<string>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  // A caller that never asks for readiness must not see an unhandled rejection when the relay stops early.
  ready.catch(() => undefined);
  const serve = handler(opts);

  const loop = async (): Promise<void> => {
    for (let failures = 0; !stopping.signal.aborted; ) {
      let wait = opts.checkIntervalMs;
      try {
        const material = await opts.source();
        if (stopping.signal.aborted) break;
        if (server === undefined) {
          const fresh = createServer({ cert: material.certPem, key: material.keyPem }, (req, res) => {
            serve(req, res).catch((err: unknown) => {
              opts.logger.error('WebhookRequestFailed', { error: err instanceof Error ? err.message : String(err) });
              if (!res.headersSent) send(res, 500, { message: 'internal error' });
            });
          });
          // A listener that could not bind (port in use) is dropped, so the next round tries afresh.
          await new Promise<void>((resolve, reject) => {
            fresh.once('error', reject);
            fresh.listen(opts.port, opts.host, () => resolve());
          });
          server = fresh;
          const addr = server.address() as AddressInfo;
          const url = `https://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
          opts.logger.info('WebhookListening', { url });
          resolveReady(url);
        } else if (current?.certPem !== material.certPem || current.keyPem !== material.keyPem) {
          server.setSecureContext({ cert: material.certPem, key: material.keyPem });
          opts.logger.info('WebhookCertificateReloaded');
        }
        current = material;
        failures = 0;
      } catch (err) {
        wait = backoffMs(failures++, opts.backoff.initialMs, opts.backoff.maxMs);
        opts.logger.warn('WebhookCertificateUnavailable', { retryInMs: wait, error: err instanceof Error ? err.message : String(err) });
      }
      await delay(wait, stopping.signal);
    }
  };
  const running = loop();

  return {
    ready: () => ready,
    serving: () => current,
    async close() {
      stopping.abort();
      await running;
      rejectReady(new Error('webhook stopped'));
      if (server !== undefined) await closeServer(server);
    },
  };
}
