/**
 * An HTTPS listener whose certificate comes from a source asked again every check interval (the relay's own CA,
 * or files cert-manager mounts) and is swapped into the running server without a restart. It listens once a
 * first certificate was obtained, retrying with backoff until then. With `clientAuth` it asks every client for a
 * certificate issued by the source's CA bundle (mutual TLS): the extender port, called by kube-scheduler only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { AppLogger } from '../../powertools';
import { backoffMs, realDelay, type DelayFn } from '../delay';
import { closeServer, send } from '../server';
import type { ServingMaterial } from './webhookCertificates';
import { errorMessage } from '../../errors';

/** Where the serving certificate comes from; called once per check interval. */
export type ServingSource = () => Promise<ServingMaterial>;

export interface TlsListenerOptions {
  /** Prefix of its log messages: `Webhook` gives WebhookListening, WebhookCertificateReloaded, WebhookCertificateUnavailable. */
  readonly logPrefix: string;
  readonly host: string;
  readonly port: number;
  readonly source: ServingSource;
  readonly handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  readonly logger: AppLogger;
  readonly checkIntervalMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly delay?: DelayFn;
  /** Mutual TLS: a request is served only with a client certificate issued by the CA bundle, for this common name. */
  readonly clientAuth?: { readonly commonName: string };
}

export interface RunningTlsListener {
  /** Resolves with the listener's URL once a certificate was obtained and the server listens. */
  ready(): Promise<string>;
  /** True once it listens. */
  listening(): boolean;
  /** The certificate currently served. */
  serving(): ServingMaterial | undefined;
  close(): Promise<void>;
}

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

/** Why a request's client certificate is not kube-scheduler's, or undefined when it is. Never trusts a header. */
export function clientCertificateRefusal(socket: TLSSocket, commonName: string): string | undefined {
  const peer = socket.getPeerCertificate();
  if (peer === null || Object.keys(peer).length === 0) return 'no client certificate was presented';
  if (!socket.authorized) return `the client certificate is not issued by the relay's CA (${String(socket.authorizationError)})`;
  if (peer.subject?.CN !== commonName) return `the client certificate is for ${JSON.stringify(peer.subject?.CN ?? '')}, not ${JSON.stringify(commonName)}`;
  if (!(peer.ext_key_usage ?? []).includes(CLIENT_AUTH_OID)) return 'the client certificate is not for client authentication';
  return undefined;
}

export function startTlsListener(opts: TlsListenerOptions): RunningTlsListener {
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

  const contextOf = (m: ServingMaterial) => ({
    cert: m.certPem,
    key: m.keyPem,
    // Every client is asked for a certificate; one that has none or a bad one is answered a clear refusal (below)
    // rather than a bare TLS alert, so whoever calls learns what is wrong.
    ...(opts.clientAuth !== undefined ? { ca: m.caBundlePem, requestCert: true, rejectUnauthorized: false } : {}),
  });

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (opts.clientAuth !== undefined) {
      const refusal = clientCertificateRefusal(req.socket as TLSSocket, opts.clientAuth.commonName);
      if (refusal !== undefined) {
        opts.logger.warn(`${opts.logPrefix}ClientRefused`, { remote: req.socket.remoteAddress, path: new URL(req.url ?? '/', 'https://relay.invalid').pathname, reason: refusal });
        send(res, 401, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 401, reason: 'Unauthorized', message: `${refusal}: this port serves kube-scheduler only (its extender tlsConfig certFile/keyFile)` });
        return;
      }
    }
    opts.handler(req, res).catch((err: unknown) => {
      opts.logger.error(`${opts.logPrefix}RequestFailed`, { error: errorMessage(err) });
      if (!res.headersSent) send(res, 500, { message: 'internal error' });
    });
  };

  const loop = async (): Promise<void> => {
    for (let failures = 0; !stopping.signal.aborted; ) {
      let wait = opts.checkIntervalMs;
      try {
        const material = await opts.source();
        if (stopping.signal.aborted) break;
        if (server === undefined) {
          const fresh = createServer(contextOf(material), serve);
          // A listener that could not bind (port in use) is dropped, so the next round tries afresh.
          await new Promise<void>((resolve, reject) => {
            fresh.once('error', reject);
            fresh.listen(opts.port, opts.host, () => resolve());
          });
          server = fresh;
          const addr = server.address() as AddressInfo;
          const url = `https://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
          opts.logger.info(`${opts.logPrefix}Listening`, { url, clientCertificate: opts.clientAuth !== undefined ? 'required' : 'not asked' });
          resolveReady(url);
        } else if (current?.certPem !== material.certPem || current.keyPem !== material.keyPem || current.caBundlePem !== material.caBundlePem) {
          server.setSecureContext(contextOf(material));
          opts.logger.info(`${opts.logPrefix}CertificateReloaded`);
        }
        current = material;
        failures = 0;
      } catch (err) {
        wait = backoffMs(failures++, opts.backoff.initialMs, opts.backoff.maxMs);
        opts.logger.warn(`${opts.logPrefix}CertificateUnavailable`, { retryInMs: wait, error: errorMessage(err) });
      }
      await delay(wait, stopping.signal);
    }
  };
  const running = loop();

  return {
    ready: () => ready,
    listening: () => server !== undefined,
    serving: () => current,
    async close() {
      stopping.abort();
      await running;
      rejectReady(new Error('listener stopped'));
      if (server !== undefined) await closeServer(server);
    },
  };
}

/** Shares one in-flight call among concurrent callers (two listeners refreshing one self-managed Secret). */
export function coalesced(source: ServingSource): ServingSource {
  let inFlight: Promise<ServingMaterial> | undefined;
  return () => {
    inFlight ??= source().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}
