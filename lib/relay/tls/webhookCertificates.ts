/**
 * The webhook's TLS without extra components ("self-managed" mode): the relay keeps its own CA and serving
 * certificate in one Secret, renews them before they expire, and keeps the MutatingWebhookConfiguration's
 * caBundle equal to its CA bundle. Every replica runs the same idempotent round; the API server's optimistic
 * concurrency (create -> 409 AlreadyExists, replace with resourceVersion -> 409 Conflict) decides which replica's
 * write wins, and the others adopt it on their next read. The CA can later issue kube-scheduler's client
 * certificate too (certificates.ts, usage "client").
 */
import { X509Certificate } from 'node:crypto';
import { ApiException, type AdmissionregistrationV1Api, type CoreV1Api } from '@kubernetes/client-node';
import type { AppLogger } from '../../powertools';
import { statusMessage } from '../kubeWriter';
import { createCertificateAuthority, DAY_MS, expiresAtMs, issueCertificate, signedBy, splitPemBundle, type KeyPairPem } from './certificates';

export interface ServingMaterial {
  readonly certPem: string;
  readonly keyPem: string;
  /** Every CA the webhook's clients must trust (the current one first; the previous one while it is valid). */
  readonly caBundlePem: string;
}

export interface SelfManagedTlsSettings {
  readonly namespace: string;
  readonly secretName: string;
  /** The MutatingWebhookConfiguration whose caBundle is kept current; empty when the webhook is off. */
  readonly webhookConfigurationName: string;
  /**
   * kube-scheduler's client certificate for the extender port (mutual TLS): issued by the same CA, kept in this
   * Secret (tls.crt, tls.key, and ca.crt to verify the relay), renewed like the serving certificate.
   */
  readonly client?: { readonly secretName: string; readonly commonName: string };
  /** The Service kube-apiserver calls; its DNS names go into the serving certificate. */
  readonly serviceName: string;
  readonly caValidDays: number;
  readonly certValidDays: number;
  /** Renew this long before expiry. */
  readonly renewBeforeDays: number;
}

export const defaultValidity = { caValidDays: 3650, certValidDays: 365, renewBeforeDays: 30 } as const;

export interface SelfManagedTlsDeps {
  readonly core: Pick<CoreV1Api, 'readNamespacedSecret' | 'createNamespacedSecret' | 'replaceNamespacedSecret'>;
  readonly admission: Pick<AdmissionregistrationV1Api, 'readMutatingWebhookConfiguration' | 'replaceMutatingWebhookConfiguration'>;
  readonly logger: AppLogger;
  readonly now: () => Date;
}

const KEYS = { cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt', caKey: 'ca.key' } as const;

interface StoredMaterial extends ServingMaterial {
  readonly caKeyPem: string;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (text: string | undefined) => (text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8'));
const codeOf = (err: unknown) => (err instanceof ApiException ? err.code : undefined);

/** `<svc>`, `<svc>.<ns>`, `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`. */
export function serviceDnsNames(service: string, namespace: string): string[] {
  return [service, `${service}.${namespace}`, `${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`];
}

export class SelfManagedWebhookTls {
  constructor(
    private readonly settings: SelfManagedTlsSettings,
    private readonly deps: SelfManagedTlsDeps,
  ) {}

  /** One round: make sure a valid Secret exists (creating or renewing it), then the caBundle. Returns what to serve. */
  async refresh(): Promise<ServingMaterial> {
    const material = await this.ensureSecret();
    if (this.settings.webhookConfigurationName !== '') await this.syncCaBundle(material.caBundlePem);
    if (this.settings.client !== undefined) await this.ensureClientSecret(material, this.settings.client);
    return { certPem: material.certPem, keyPem: material.keyPem, caBundlePem: material.caBundlePem };
  }

  /**
   * kube-scheduler's client certificate: kept while it was issued by the current CA for the expected name and is
   * not due for renewal (its ca.crt follows the bundle); otherwise issued anew. Replicas race as for the serving
   * Secret: a create meeting AlreadyExists or a stale replace leaves the winner's Secret for the next round.
   */
  private async ensureClientSecret(material: StoredMaterial, client: { readonly secretName: string; readonly commonName: string }): Promise<void> {
    const { namespace } = this.settings;
    const [ca] = splitPemBundle(material.caBundlePem);
    if (ca === undefined) throw new Error('the CA bundle holds no certificate');
    let found: { resourceVersion?: string; data: Record<string, string> } | undefined;
    try {
      const secret = await this.deps.core.readNamespacedSecret({ name: client.secretName, namespace });
      found = { ...(secret.metadata?.resourceVersion !== undefined ? { resourceVersion: secret.metadata.resourceVersion } : {}), data: secret.data ?? {} };
    } catch (err) {
      if (codeOf(err) !== 404) throw new Error(`read secret ${namespace}/${client.secretName}: ${statusMessage(err)}`, { cause: err });
    }
    const certPem = unb64(found?.data[KEYS.cert]);
    const keyPem = unb64(found?.data[KEYS.key]);
    const current = certPem !== undefined && keyPem !== undefined && this.clientStillGood(certPem, ca, client.commonName);
    if (current && unb64(found?.data[KEYS.ca]) === material.caBundlePem) return;
    const issued =
      current && certPem !== undefined && keyPem !== undefined
        ? { certPem, keyPem }
        : await issueCertificate({ certPem: ca, keyPem: material.caKeyPem }, { commonName: client.commonName, usage: 'client', validDays: this.settings.certValidDays, now: this.deps.now() });
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: client.secretName, namespace, labels: { 'app.kubernetes.io/managed-by': 'hami-relay' }, ...(found?.resourceVersion !== undefined ? { resourceVersion: found.resourceVersion } : {}) },
      data: { [KEYS.cert]: b64(issued.certPem), [KEYS.key]: b64(issued.keyPem), [KEYS.ca]: b64(material.caBundlePem) },
    };
    try {
      if (found === undefined) await this.deps.core.createNamespacedSecret({ namespace, body });
      else await this.deps.core.replaceNamespacedSecret({ name: client.secretName, namespace, body });
      this.deps.logger.info('ExtenderClientCertificateIssued', { secret: `${namespace}/${client.secretName}`, commonName: client.commonName, expires: new Date(expiresAtMs(issued.certPem)).toISOString() });
    } catch (err) {
      // Another replica wrote it first: theirs is as good; the next round checks it.
      if (codeOf(err) !== 409) throw new Error(`write secret ${namespace}/${client.secretName}: ${statusMessage(err)}`, { cause: err });
    }
  }

  private clientStillGood(certPem: string, ca: string, commonName: string): boolean {
    try {
      const renewBefore = this.settings.renewBeforeDays * DAY_MS;
      return signedBy(certPem, ca) && expiresAtMs(certPem) - this.deps.now().getTime() >= renewBefore && new X509Certificate(certPem).subject === `CN=${commonName}`;
    } catch {
      return false;
    }
  }

  private async ensureSecret(): Promise<StoredMaterial> {
    const { namespace, secretName } = this.settings;
    const found = await this.readSecret();
    if (found === undefined) {
      const fresh = await this.renew(undefined);
      try {
        await this.deps.core.createNamespacedSecret({ namespace, body: this.secretBody(fresh) });
        this.deps.logger.info('WebhookCertificateCreated', { secret: `${namespace}/${secretName}`, expires: new Date(expiresAtMs(fresh.certPem)).toISOString() });
        return fresh;
      } catch (err) {
        if (codeOf(err) !== 409) throw new Error(`create secret ${namespace}/${secretName}: ${statusMessage(err)}`, { cause: err });
        // Another replica created it first: use theirs.
        const theirs = await this.readSecret();
        if (theirs?.material === undefined) throw new Error(`secret ${namespace}/${secretName} exists but is unreadable`, { cause: err });
        return theirs.material;
      }
    }
    if (found.material !== undefined && this.stillGood(found.material)) return found.material;
    const renewed = await this.renew(found.material);
    try {
      await this.deps.core.replaceNamespacedSecret({ name: secretName, namespace, body: { ...this.secretBody(renewed), metadata: { name: secretName, namespace, resourceVersion: found.resourceVersion } } });
      this.deps.logger.info('WebhookCertificateRenewed', { secret: `${namespace}/${secretName}`, expires: new Date(expiresAtMs(renewed.certPem)).toISOString() });
      return renewed;
    } catch (err) {
      if (codeOf(err) !== 409) throw new Error(`replace secret ${namespace}/${secretName}: ${statusMessage(err)}`, { cause: err });
      const theirs = await this.readSecret();
      if (theirs?.material === undefined) throw new Error(`secret ${namespace}/${secretName} changed under us and is unreadable`, { cause: err });
      return theirs.material;
    }
  }

  private async readSecret(): Promise<{ resourceVersion: string | undefined; material: StoredMaterial | undefined } | undefined> {
    const { namespace, secretName } = this.settings;
    try {
      const secret = await this.deps.core.readNamespacedSecret({ name: secretName, namespace });
      const data = secret.data ?? {};
      const certPem = unb64(data[KEYS.cert]);
      const keyPem = unb64(data[KEYS.key]);
      const caBundlePem = unb64(data[KEYS.ca]);
      const caKeyPem = unb64(data[KEYS.caKey]);
      const complete = certPem && keyPem && caBundlePem && caKeyPem;
      return { resourceVersion: secret.metadata?.resourceVersion, material: complete ? { certPem, keyPem, caBundlePem, caKeyPem } : undefined };
    } catch (err) {
      if (codeOf(err) === 404) return undefined;
      throw new Error(`read secret ${namespace}/${secretName}: ${statusMessage(err)}`, { cause: err });
    }
  }

  /** Valid, issued by the current CA for our Service's names, and neither it nor the CA due for renewal. */
  private stillGood(m: StoredMaterial): boolean {
    try {
      const now = this.deps.now().getTime();
      const renewBefore = this.settings.renewBeforeDays * DAY_MS;
      const [ca] = splitPemBundle(m.caBundlePem);
      if (ca === undefined || !signedBy(m.certPem, ca)) return false;
      if (expiresAtMs(m.certPem) - now < renewBefore) return false;
      // The CA must outlive any certificate it issues from now on.
      if (expiresAtMs(ca) - now < this.settings.certValidDays * DAY_MS + renewBefore) return false;
      const names = new X509Certificate(m.certPem).subjectAltName ?? '';
      return serviceDnsNames(this.settings.serviceName, this.settings.namespace).every((n) => names.split(', ').includes(`DNS:${n}`));
    } catch {
      return false;
    }
  }

  /** Keeps the CA while it has enough life left, otherwise starts a new one and keeps the old one trusted until it expires. */
  private async renew(previous: StoredMaterial | undefined): Promise<StoredMaterial> {
    const now = this.deps.now();
    const { caValidDays, certValidDays, renewBeforeDays, serviceName, namespace } = this.settings;
    const previousCa = previous === undefined ? undefined : splitPemBundle(previous.caBundlePem)[0];
    const caUsable =
      previous !== undefined && previousCa !== undefined && expiresAtMs(previousCa) - now.getTime() >= (certValidDays + renewBeforeDays) * DAY_MS;
    let ca: KeyPairPem;
    let bundle: string[];
    if (caUsable && previousCa !== undefined && previous !== undefined) {
      ca = { certPem: previousCa, keyPem: previous.caKeyPem };
      bundle = splitPemBundle(previous.caBundlePem);
    } else {
      ca = await createCertificateAuthority({ commonName: `${serviceName}.${namespace} webhook CA`, validDays: caValidDays, now });
      const stillValidOld = (previous === undefined ? [] : splitPemBundle(previous.caBundlePem)).filter((pem) => expiresAtMs(pem) > now.getTime());
      bundle = [ca.certPem, ...stillValidOld];
    }
    const serving = await issueCertificate(ca, {
      commonName: `${serviceName}.${namespace}.svc`,
      dnsNames: serviceDnsNames(serviceName, namespace),
      usage: 'server',
      validDays: certValidDays,
      now,
    });
    return { certPem: serving.certPem, keyPem: serving.keyPem, caBundlePem: bundle.join(''), caKeyPem: ca.keyPem };
  }

  private secretBody(m: StoredMaterial) {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: this.settings.secretName, namespace: this.settings.namespace, labels: { 'app.kubernetes.io/managed-by': 'hami-relay' } },
      data: { [KEYS.cert]: b64(m.certPem), [KEYS.key]: b64(m.keyPem), [KEYS.ca]: b64(m.caBundlePem), [KEYS.caKey]: b64(m.caKeyPem) },
    };
  }

  /** Sets every webhook's caBundle in our MutatingWebhookConfiguration (a Helm upgrade may have reset it). */
  private async syncCaBundle(caBundlePem: string): Promise<void> {
    const name = this.settings.webhookConfigurationName;
    let config;
    try {
      config = await this.deps.admission.readMutatingWebhookConfiguration({ name });
    } catch (err) {
      if (codeOf(err) === 404) {
        this.deps.logger.warn('WebhookConfigurationMissing', { name });
        return;
      }
      throw new Error(`read mutatingwebhookconfiguration ${name}: ${statusMessage(err)}`, { cause: err });
    }
    const wanted = b64(caBundlePem);
    const stale = (config.webhooks ?? []).filter((w) => w.clientConfig.caBundle !== wanted);
    if (stale.length === 0) return;
    const body = { ...config, webhooks: (config.webhooks ?? []).map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle: wanted } })) };
    try {
      await this.deps.admission.replaceMutatingWebhookConfiguration({ name, body });
      this.deps.logger.info('WebhookCaBundleUpdated', { name, webhooks: stale.map((w) => w.name) });
    } catch (err) {
      // 409: someone changed it since our read (another replica, a Helm upgrade); the next round retries.
      if (codeOf(err) === 409) return;
      throw new Error(`update mutatingwebhookconfiguration ${name}: ${statusMessage(err)}`, { cause: err });
    }
  }
}
