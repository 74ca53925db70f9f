/**
 * X.509 for the relay's own certificate authority: a CA, and certificates it issues for a server (the
 * admission webhook's serving certificate) or a client (kube-scheduler's, when the extender port takes mTLS).
 * Node's crypto parses and verifies certificates but cannot create them, so node-forge (pure JS, pinned, no
 * dependencies) builds and signs them; the RSA keys themselves come from Node's native generator, which is
 * orders of magnitude faster than generating them in JS.
 */
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import forge from 'node-forge';

export interface KeyPairPem {
  readonly certPem: string;
  readonly keyPem: string;
}

export type CertificateUsage = 'server' | 'client';

export interface IssueOptions {
  readonly commonName: string;
  /** Subject alternative names (servers are verified by these, never by the common name). */
  readonly dnsNames?: readonly string[];
  readonly usage: CertificateUsage;
  readonly validDays: number;
  readonly now: Date;
}

export const DAY_MS = 86_400_000;

/** node-forge writes CRLF line ends; Kubernetes tools and Node write LF. One form keeps bundles comparable. */
const pem = (cert: forge.pki.Certificate) => forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');

function newKeys(): { publicKey: forge.pki.PublicKey; privateKey: forge.pki.PrivateKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const forgeKey = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return { privateKey: forgeKey, publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e), keyPem: privateKey };
}

/** A positive 128-bit serial number (the top bit clear, so DER does not read it as negative). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

function validity(cert: forge.pki.Certificate, now: Date, days: number): void {
  // A minute of slack for clocks that run slightly behind ours.
  cert.validity.notBefore = new Date(now.getTime() - 60_000);
  cert.validity.notAfter = new Date(now.getTime() + days * DAY_MS);
}

export function createCertificateAuthority(opts: { readonly commonName: string; readonly validDays: number; readonly now: Date }): KeyPairPem {
  const keys = newKeys();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  validity(cert, opts.now, opts.validDays);
  const subject = [{ name: 'commonName', value: opts.commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { certPem: pem(cert), keyPem: keys.keyPem };
}

export function issueCertificate(ca: KeyPairPem, opts: IssueOptions): KeyPairPem {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem) as forge.pki.rsa.PrivateKey;
  const keys = newKeys();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  validity(cert, opts.now, opts.validDays);
  cert.setSubject([{ name: 'commonName', value: opts.commonName }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: opts.usage === 'server', clientAuth: opts.usage === 'client' },
    ...(opts.dnsNames && opts.dnsNames.length > 0 ? [{ name: 'subjectAltName', altNames: opts.dnsNames.map((value) => ({ type: 2, value })) }] : []),
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: pem(cert), keyPem: keys.keyPem };
}

/** The PEM blocks of a bundle, each ending in a newline. */
export function splitPemBundle(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((block) => `${block}\n`) ?? [];
}

/** When a certificate stops being valid (epoch ms), read natively. */
export function expiresAtMs(certPem: string): number {
  return Date.parse(new X509Certificate(certPem).validTo);
}

/** Whether `certPem` was signed by `caPem`, checked natively. */
export function signedBy(certPem: string, caPem: string): boolean {
  try {
    return new X509Certificate(certPem).verify(new X509Certificate(caPem).publicKey);
  } catch {
    return false;
  }
}
