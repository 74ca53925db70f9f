/**
 * X.509 for the relay's own certificate authority: a CA, and certificates it issues for a server (the
 * admission webhook's serving certificate) or a client (kube-scheduler's, when the extender port takes mTLS).
 * Node's crypto parses and verifies certificates but cannot create them, so @peculiar/x509 builds them (ASN.1
 * in TypeScript) and WebCrypto, Node's native one, makes the RSA keys and signs. WebCrypto is asynchronous,
 * so creating and issuing are too: neither blocks the event loop, key generation included.
 */
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
// Before @peculiar/x509: its dependency tsyringe throws at import without Reflect metadata.
import './reflectMetadata';
import * as x509 from '@peculiar/x509';

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

/** Node's WebCrypto, handed to every call rather than set as @peculiar/x509's process-wide default. */
const webCrypto = webcrypto as unknown as Crypto;

/**
 * RSA 2048 with SHA-256 (sha256WithRSAEncryption), as before: the CA keys already kept in Secrets are RSA, and it is
 * kubeadm's and cert-manager's default, which every Kubernetes component accepts.
 */
const RSA_SHA256 = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

interface NewKeys {
  readonly publicKey: CryptoKey;
  readonly privateKey: CryptoKey;
  /** PKCS#8, as Node writes it (what the Secrets hold). */
  readonly keyPem: string;
}

async function newKeys(): Promise<NewKeys> {
  const { publicKey, privateKey } = await webCrypto.subtle.generateKey({ ...RSA_SHA256, modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]) }, true, ['sign', 'verify']);
  const pkcs8 = Buffer.from(await webCrypto.subtle.exportKey('pkcs8', privateKey));
  const keyPem = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'pem' }).toString();
  return { publicKey, privateKey, keyPem };
}

/** A CA's private key (PKCS#8 or PKCS#1 PEM), for signing. */
async function signingKey(keyPem: string): Promise<CryptoKey> {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`the CA key is ${String(key.asymmetricKeyType)}, not RSA`);
  return webCrypto.subtle.importKey('pkcs8', key.export({ type: 'pkcs8', format: 'der' }), RSA_SHA256, false, ['sign']);
}

/**
 * A positive 128-bit serial number (the top bit clear, so DER does not read it as negative). @peculiar/x509 drops
 * leading zero bytes: Go's parser (kube-apiserver reading the caBundle) refuses an integer not minimally encoded.
 */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}

function validity(now: Date, days: number): { notBefore: Date; notAfter: Date } {
  // A minute of slack for clocks that run slightly behind ours.
  return { notBefore: new Date(now.getTime() - 60_000), notAfter: new Date(now.getTime() + days * DAY_MS) };
}

/** CN=<commonName> as a PrintableString where it can be one, else UTF8String (RFC 5280 4.1.2.4). */
function commonNameOf(commonName: string): x509.Name {
  return new x509.Name([{ CN: [x509.Name.isPrintableString(commonName) ? { printableString: commonName } : { utf8String: commonName }] }]);
}

/** LF line ends and a final newline, as Kubernetes tools and Node write PEM. One form keeps bundles comparable. */
const pem = (cert: x509.X509Certificate) => `${cert.toString('pem').replace(/\r\n/g, '\n').trimEnd()}\n`;

export async function createCertificateAuthority(opts: { readonly commonName: string; readonly validDays: number; readonly now: Date }): Promise<KeyPairPem> {
  const keys = await newKeys();
  const name = commonNameOf(opts.commonName);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: name,
      issuer: name,
      ...validity(opts.now, opts.validDays),
      publicKey: keys.publicKey,
      signingKey: keys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webCrypto),
      ],
    },
    webCrypto,
  );
  return { certPem: pem(cert), keyPem: keys.keyPem };
}

export async function issueCertificate(ca: KeyPairPem, opts: IssueOptions): Promise<KeyPairPem> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const [caKey, keys] = await Promise.all([signingKey(ca.keyPem), newKeys()]);
  // The CA's own key identifier, so verifiers that match issuers by key id (Go's) find it.
  const caKeyId = caCert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ?? Buffer.from(await caCert.publicKey.getKeyIdentifier(webCrypto)).toString('hex');
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: commonNameOf(opts.commonName),
      // The CA's subject as it is encoded there: chain building compares these bytes.
      issuer: caCert.subjectName,
      ...validity(opts.now, opts.validDays),
      publicKey: keys.publicKey,
      signingKey: caKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([opts.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
        ...(opts.dnsNames && opts.dnsNames.length > 0 ? [new x509.SubjectAlternativeNameExtension(opts.dnsNames.map((value) => ({ type: 'dns' as const, value })))] : []),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webCrypto),
        new x509.AuthorityKeyIdentifierExtension(caKeyId),
      ],
    },
    webCrypto,
  );
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
