/**
 * The admission webhook's HTTPS listener (docs/api.md §7a): POST /webhook answers AdmissionReview v1 with
 * the pure decision of lib/admission/review.ts, over the registered cards the Node informer has seen. TLS comes
 * from the relay's own CA (tls/webhookCertificates.ts) or from files a cert-manager Certificate mounts; either
 * way it is re-read every check interval and swapped into the running server without a restart.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { CardCapacity } from '../admission/cards';
import { reviewAdmission, type AdmissionSettings } from '../admission/review';
import type { AppLogger } from '../powertools';
import type { DelayFn } from './delay';
import { readBody, send } from './server';
import { startTlsListener, type RunningTlsListener, type ServingSource } from './tls/listener';
import { errorMessage } from '../errors';

export const WEBHOOK_PATH = '/webhook';

export type { ServingSource } from './tls/listener';

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

export type RunningWebhook = RunningTlsListener;

function handler(opts: WebhookOptions) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'https://relay.invalid');
    if (req.method === 'GET' && url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
    if (req.method !== 'POST' || url.pathname !== WEBHOOK_PATH) return send(res, 404, { message: `no route for ${req.method ?? 'GET'} ${url.pathname}` });
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return send(res, 400, { message: `request body is not JSON: ${errorMessage(err)}` });
    }
    const outcome = reviewAdmission(body, opts.admission, opts.capacity());
    if (outcome.kind === 'badRequest') {
      opts.logger.warn('AdmissionReviewRejected', { error: outcome.message });
      return send(res, 400, { message: outcome.message });
    }
    const d = outcome.decision;
    opts.logger.info('AdmissionReviewed', {
      // Strings the review read, never the body itself: a log line must not walk what the review refused to.
      namespace: outcome.subject.namespace,
      pod: outcome.subject.pod,
      allowed: d.allowed,
      ...(d.allowed ? { patchOperations: d.patch.length, warnings: d.warnings } : { code: d.code, reason: d.message }),
    });
    return send(res, 200, outcome.review);
  };
}

/**
 * Obtains a certificate (retrying with backoff until one comes), then listens; every check interval it asks the
 * source again and swaps a changed certificate into the server (tls/listener.ts). The extender never waits for it.
 */
export function startWebhook(opts: WebhookOptions): RunningWebhook {
  return startTlsListener({ ...opts, logPrefix: 'Webhook', handler: handler(opts) });
}
