/**
 * The relay's certificates, read back by Node's own X.509 parser (OpenSSL) and by a DER walker written here,
 * never by the library that made them: a CA, serving and client certificates with the key usages, names and
 * validity kube-apiserver and kube-scheduler (Go's crypto/x509) check; then real TLS handshakes with them,
 * server-authenticated and mutual.
 */
import nodeCrypto from 'node:crypto';
import { createPrivateKey, generateKeyPairSync, webcrypto, X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type TLSSocket } from 'node:tls';
// As lib/relay/tls/certificates.ts does: tsyringe, under @peculiar/x509, needs it loaded first.
import '../../../lib/relay/tls/reflectMetadata';
import * as x509 from '@peculiar/x509';
import { createCertificateAuthority, DAY_MS, issueCertificate, signedBy, splitPemBundle, type KeyPairPem } from '../../../lib/relay/tls/certificates';
import { clientCertificateRefusal } from '../../../lib/relay/tls/listener';

// Handshakes check validity against the real clock.
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const SERVICE = 'hami-relay.hami-system.svc';
const DNS_NAMES = ['hami-relay', 'hami-relay.hami-system', SERVICE, `${SERVICE}.cluster.local`];

// --- a DER reader: enough of X.509 to see what Node's parser does not show ---

interface Tlv {
  readonly tag: number;
  /** The whole element, header included. */
  readonly der: Buffer;
  readonly value: Buffer;
}

function tlvAt(buf: Buffer, at: number): Tlv {
  const tag = buf[at]!;
  let length = buf[at + 1]!;
  let header = 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + buf[at + 2 + i]!;
    header += bytes;
  }
  return { tag, der: buf.subarray(at, at + header + length), value: buf.subarray(at + header, at + header + length) };
}

function children(tlv: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = 0; at < tlv.value.length; at += out[out.length - 1]!.der.length) out.push(tlvAt(tlv.value, at));
  return out;
}

const OID = {
  basicConstraints: '551d13',
  keyUsage: '551d0f',
  subjectKeyIdentifier: '551d0e',
  authorityKeyIdentifier: '551d23',
  sha256WithRsa: '2a864886f70d01010b',
} as const;

const KEY_USAGE_BITS = ['digitalSignature', 'nonRepudiation', 'keyEncipherment', 'dataEncipherment', 'keyAgreement', 'keyCertSign', 'cRLSign', 'encipherOnly', 'decipherOnly'];

interface Parsed {
  /** The serial number's INTEGER content, in hex. */
  readonly serial: string;
  readonly signatureOid: string;
  /** The issuer and subject Names exactly as encoded. */
  readonly issuerDer: string;
  readonly subjectDer: string;
  /** Extension OID (hex) -> critical flag and the extnValue's content. */
  readonly extensions: Map<string, { critical: boolean; value: Tlv }>;
}

function parse(certPem: string): Parsed {
  const cert = tlvAt(new X509Certificate(certPem).raw, 0);
  const [tbs, signatureAlgorithm] = children(cert);
  const fields = children(tbs!);
  const [, serial, , issuer, , subject] = fields;
  const extensions = new Map<string, { critical: boolean; value: Tlv }>();
  const wrapped = fields.find((f) => f.tag === 0xa3);
  for (const ext of wrapped === undefined ? [] : children(children(wrapped)[0]!)) {
    const parts = children(ext);
    const critical = parts.length === 3 && parts[1]!.value[0] === 0xff;
    extensions.set(parts[0]!.value.toString('hex'), { critical, value: tlvAt(parts[parts.length - 1]!.value, 0) });
  }
  return { serial: serial!.value.toString('hex'), signatureOid: children(signatureAlgorithm!)[0]!.value.toString('hex'), issuerDer: issuer!.der.toString('hex'), subjectDer: subject!.der.toString('hex'), extensions };
}

function keyUsages(p: Parsed): { critical: boolean; usages: string[] } | undefined {
  const ext = p.extensions.get(OID.keyUsage);
  if (ext === undefined) return undefined;
  const bits = ext.value.value.subarray(1);
  return { critical: ext.critical, usages: KEY_USAGE_BITS.filter((_, i) => ((bits[i >> 3] ?? 0) & (0x80 >> (i & 7))) !== 0) };
}

function basicConstraints(p: Parsed): { critical: boolean; ca: boolean; pathLength: number | undefined } | undefined {
  const ext = p.extensions.get(OID.basicConstraints);
  if (ext === undefined) return undefined;
  const parts = children(ext.value);
  const ca = parts[0]?.tag === 0x01 && parts[0].value[0] === 0xff;
  const length = parts.find((t) => t.tag === 0x02);
  return { critical: ext.critical, ca, pathLength: length === undefined ? undefined : length.value.readUIntBE(0, length.value.length) };
}

/** A short string's DER, in hex: UTF8String (tag 0x0c) or PrintableString (0x13). */
const stringDer = (tag: string) => (text: string) => `${tag}${Buffer.byteLength(text).toString(16).padStart(2, '0')}${Buffer.from(text).toString('hex')}`;
const utf8String = stringDer('0c');
const printableString = stringDer('13');

const subjectKeyId = (p: Parsed) => p.extensions.get(OID.subjectKeyIdentifier)?.value.value.toString('hex');
const authorityKeyId = (p: Parsed) => {
  const ext = p.extensions.get(OID.authorityKeyIdentifier);
  return ext === undefined ? undefined : children(ext.value).find((t) => t.tag === 0x80)?.value.toString('hex');
};

// --- TLS ---

interface Handshake {
  readonly clientError?: string;
  /** What the server saw of the client's certificate (mutual TLS). */
  readonly server?: { readonly authorized: boolean; readonly refusal: string | undefined };
}

/**
 * One handshake on loopback: the server presents `serving` (and, with `clientCa`, asks for a client certificate
 * and reports whether it verifies), the client trusts only `trust` and checks the certificate for `servername`.
 */
async function handshake(opts: { serving: KeyPairPem; trust: string; servername: string; clientCa?: string; client?: KeyPairPem }): Promise<Handshake> {
  let seen: Handshake['server'];
  const server = createServer({ cert: opts.serving.certPem, key: opts.serving.keyPem, ...(opts.clientCa !== undefined ? { ca: opts.clientCa, requestCert: true, rejectUnauthorized: false } : {}) }, (socket: TLSSocket) => {
    if (opts.clientCa !== undefined) seen = { authorized: socket.authorized, refusal: clientCertificateRefusal(socket, 'hami-scheduler') };
    socket.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const clientError = await new Promise<string | undefined>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, servername: opts.servername, ca: opts.trust, ...(opts.client !== undefined ? { cert: opts.client.certPem, key: opts.client.keyPem } : {}) });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      socket.on('data', () => undefined);
      socket.on('end', () => resolve(undefined));
    });
    return { ...(clientError !== undefined ? { clientError } : {}), ...(seen !== undefined ? { server: seen } : {}) };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

let ca: KeyPairPem;
let serving: KeyPairPem;
let scheduler: KeyPairPem;

beforeAll(async () => {
  ca = await createCertificateAuthority({ commonName: 'hami-relay.hami-system webhook CA', validDays: 3650, now: NOW });
  [serving, scheduler] = await Promise.all([
    issueCertificate(ca, { commonName: SERVICE, dnsNames: DNS_NAMES, usage: 'server', validDays: 365, now: NOW }),
    issueCertificate(ca, { commonName: 'hami-scheduler', usage: 'client', validDays: 365, now: NOW }),
  ]);
});

describe('relay TLS: the certificate authority', () => {
  it('is a self-issued, self-signed CA for its name, usable to sign certificates only (pathlen 0), both critical', () => {
    const cert = new X509Certificate(ca.certPem);
    const der = parse(ca.certPem);

    expect(cert.subject).toBe('CN=hami-relay.hami-system webhook CA');
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.ca).toBe(true);
    expect(cert.checkIssued(cert)).toBe(true);
    expect(signedBy(ca.certPem, ca.certPem)).toBe(true);
    expect(basicConstraints(der)).toEqual({ critical: true, ca: true, pathLength: 0 });
    expect(keyUsages(der)).toEqual({ critical: true, usages: ['digitalSignature', 'keyCertSign', 'cRLSign'] });
    expect(subjectKeyId(der)).toMatch(/^[0-9a-f]{40}$/);
    expect(der.subjectDer).toContain(printableString('hami-relay.hami-system webhook CA'));
    expect(cert.subjectAltName).toBeUndefined();
  });

  it('is valid from a minute before `now` for exactly validDays, with an RSA 2048 key signed with SHA-256', () => {
    const cert = new X509Certificate(ca.certPem);

    expect(Date.parse(cert.validFrom)).toBe(NOW.getTime() - 60_000);
    expect(Date.parse(cert.validTo)).toBe(NOW.getTime() + 3650 * DAY_MS);
    expect(cert.publicKey.asymmetricKeyType).toBe('rsa');
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(parse(ca.certPem).signatureOid).toBe(OID.sha256WithRsa);
  });

  it('comes as LF-only PEM with one final newline, its key as PKCS#8 that matches the certificate', () => {
    for (const pair of [ca, serving, scheduler]) {
      expect(pair.certPem).toMatch(/^-----BEGIN CERTIFICATE-----\n(?:[A-Za-z0-9+/=]{1,64}\n)+-----END CERTIFICATE-----\n$/);
      expect(pair.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
      expect(new X509Certificate(pair.certPem).checkPrivateKey(createPrivateKey(pair.keyPem))).toBe(true);
    }
    expect(splitPemBundle(`${ca.certPem}${serving.certPem}`)).toEqual([ca.certPem, serving.certPem]);
  });

  it('gets a new key and serial number each time', async () => {
    const again = await createCertificateAuthority({ commonName: 'hami-relay.hami-system webhook CA', validDays: 3650, now: NOW });

    expect(again.keyPem).not.toBe(ca.keyPem);
    expect(new X509Certificate(again.certPem).serialNumber).not.toBe(new X509Certificate(ca.certPem).serialNumber);
    expect(signedBy(serving.certPem, again.certPem)).toBe(false);
  });
});

describe('relay TLS: certificates the CA issues', () => {
  it.each([
    ['serving', 'serverAuth', () => serving, SERVICE, '1.3.6.1.5.5.7.3.1', DNS_NAMES.map((n) => `DNS:${n}`).join(', ')],
    ['client', 'clientAuth', () => scheduler, 'hami-scheduler', '1.3.6.1.5.5.7.3.2', undefined],
  ])('a %s certificate: not a CA (critical), for %s only, signing and key encipherment (critical), its SANs', (_label, _usage, pairOf, commonName, extendedUsage, sans) => {
    const cert = new X509Certificate(pairOf().certPem);
    const der = parse(pairOf().certPem);

    expect(cert.subject).toBe(`CN=${commonName}`);
    expect(cert.ca).toBe(false);
    expect(basicConstraints(der)).toEqual({ critical: true, ca: false, pathLength: undefined });
    expect(keyUsages(der)).toEqual({ critical: true, usages: ['digitalSignature', 'keyEncipherment'] });
    expect(cert.keyUsage).toEqual([extendedUsage]);
    expect(cert.subjectAltName).toBe(sans);
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(der.signatureOid).toBe(OID.sha256WithRsa);
    expect(Date.parse(cert.validFrom)).toBe(NOW.getTime() - 60_000);
    expect(Date.parse(cert.validTo)).toBe(NOW.getTime() + 365 * DAY_MS);
  });

  it("names its CA as the CA names itself, byte for byte, and by the CA's key identifier", () => {
    const caDer = parse(ca.certPem);
    for (const pair of [serving, scheduler]) {
      const der = parse(pair.certPem);
      expect(der.issuerDer).toBe(caDer.subjectDer);
      expect(authorityKeyId(der)).toBe(subjectKeyId(caDer));
      expect(subjectKeyId(der)).toMatch(/^[0-9a-f]{40}$/);
      expect(subjectKeyId(der)).not.toBe(subjectKeyId(caDer));
      expect(new X509Certificate(pair.certPem).checkIssued(new X509Certificate(ca.certPem))).toBe(true);
      expect(signedBy(pair.certPem, ca.certPem)).toBe(true);
    }
  });

  it('issues from a CA made elsewhere: a UTF8String name, no key identifier, a PKCS#1 key', async () => {
    // Prepare: what another tool (openssl, an older relay) may have left in the Secret
    const { subtle } = webcrypto as unknown as Crypto;
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    const elsewhere = await x509.X509CertificateGenerator.createSelfSigned(
      {
        name: new x509.Name([{ CN: [{ utf8String: 'Elsewhere CA' }] }]),
        notBefore: new Date(NOW.getTime() - DAY_MS),
        notAfter: new Date(NOW.getTime() + 30 * DAY_MS),
        keys: {
          privateKey: await subtle.importKey('pkcs8', keys.privateKey.export({ type: 'pkcs8', format: 'der' }), algorithm, false, ['sign']),
          publicKey: await subtle.importKey('spki', keys.publicKey.export({ type: 'spki', format: 'der' }), algorithm, true, ['verify']),
        },
        extensions: [new x509.BasicConstraintsExtension(true, undefined, true)],
      },
      webcrypto as unknown as Crypto,
    );
    const other = { certPem: elsewhere.toString('pem'), keyPem: keys.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString() };

    // Act
    const issued = await issueCertificate(other, { commonName: SERVICE, dnsNames: [SERVICE], usage: 'server', validDays: 30, now: NOW });

    // Assess
    expect(other.keyPem).toMatch(/^-----BEGIN RSA PRIVATE KEY-----/);
    expect(parse(other.certPem).subjectDer).toContain(utf8String('Elsewhere CA'));
    expect(parse(issued.certPem).issuerDer).toBe(parse(other.certPem).subjectDer);
    expect(authorityKeyId(parse(issued.certPem))).toMatch(/^[0-9a-f]{40}$/);
    expect(signedBy(issued.certPem, other.certPem)).toBe(true);
  });

  it('encodes a name that is no PrintableString as UTF8String, unescaped', async () => {
    const issued = await issueCertificate(ca, { commonName: 'système, "client"+1', usage: 'client', validDays: 1, now: NOW });

    expect(parse(issued.certPem).subjectDer).toContain(utf8String('système, "client"+1'));
  });

  it('encodes a serial number minimally when its random bytes start with zeros (Go refuses any other)', async () => {
    const random = jest.spyOn(nodeCrypto, 'randomBytes').mockImplementation(((size: number) => Buffer.concat([Buffer.alloc(2), Buffer.alloc(size - 2, 0x5a)])) as typeof nodeCrypto.randomBytes);
    try {
      const issued = await issueCertificate(ca, { commonName: 'hami-scheduler', usage: 'client', validDays: 1, now: NOW });

      expect(random).toHaveBeenCalledWith(16);
      expect(parse(issued.certPem).serial).toBe('5a'.repeat(14));
      expect(new X509Certificate(issued.certPem).serialNumber).toBe('5A'.repeat(14));
    } finally {
      random.mockRestore();
    }
  });

  it('refuses a CA key that is not RSA, naming its type', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

    await expect(issueCertificate({ certPem: ca.certPem, keyPem: ec }, { commonName: 'x', usage: 'client', validDays: 1, now: NOW })).rejects.toThrow('the CA key is ec, not RSA');
  });
});

describe('relay TLS: handshakes with these certificates', () => {
  it('a client that trusts only the CA accepts the serving certificate for every Service name', async () => {
    for (const servername of DNS_NAMES) expect(await handshake({ serving, trust: ca.certPem, servername })).toEqual({});
  });

  it.each([
    ['another name', async () => ({ serving, trust: ca.certPem, servername: 'hami-relay.other.svc' }), 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ['another CA', async () => ({ serving, trust: (await createCertificateAuthority({ commonName: 'other', validDays: 1, now: NOW })).certPem, servername: SERVICE }), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'],
    [
      'a client certificate for the right name',
      async () => ({ serving: await issueCertificate(ca, { commonName: SERVICE, dnsNames: [SERVICE], usage: 'client', validDays: 1, now: NOW }), trust: ca.certPem, servername: SERVICE }),
      'INVALID_PURPOSE',
    ],
  ])('a client refuses the server for %s', async (_label, optsOf, code) => {
    expect((await handshake(await optsOf())).clientError).toBe(code);
  });

  it('refuses a serving certificate past its validity', async () => {
    const expired = await issueCertificate(ca, { commonName: SERVICE, dnsNames: [SERVICE], usage: 'server', validDays: 30, now: new Date(NOW.getTime() - 40 * DAY_MS) });

    expect((await handshake({ serving: expired, trust: ca.certPem, servername: SERVICE })).clientError).toBe('CERT_HAS_EXPIRED');
  });

  it("mutual TLS: the server verifies kube-scheduler's certificate against the CA, and the listener accepts it", async () => {
    expect(await handshake({ serving, trust: ca.certPem, servername: SERVICE, clientCa: ca.certPem, client: scheduler })).toEqual({ server: { authorized: true, refusal: undefined } });
  });

  it.each([
    ['no certificate', async () => undefined, /^no client certificate was presented$/],
    [
      "another CA's",
      async () => issueCertificate(await createCertificateAuthority({ commonName: 'other', validDays: 1, now: NOW }), { commonName: 'hami-scheduler', usage: 'client', validDays: 1, now: NOW }),
      /^the client certificate is not issued by the relay's CA \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\)$/,
    ],
    // OpenSSL itself checks the extended key usage for the purpose, before the listener's own check.
    ['a serving certificate', async () => issueCertificate(ca, { commonName: 'hami-scheduler', dnsNames: ['x'], usage: 'server', validDays: 1, now: NOW }), /\(INVALID_PURPOSE\)$/],
  ])('mutual TLS: the listener refuses a client with %s', async (_label, clientOf, refusal) => {
    const client = await clientOf();
    const seen = await handshake({ serving, trust: ca.certPem, servername: SERVICE, clientCa: ca.certPem, ...(client !== undefined ? { client } : {}) });

    expect(seen.server?.authorized).toBe(false);
    expect(seen.server?.refusal).toMatch(refusal);
  });
});
