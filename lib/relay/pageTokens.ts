/**
 * The user port's continue tokens (docs/relay.md, "Page tokens"). A token is AES-256-GCM over the position where
 * the next page starts: the control plane's own continue token, how many items of that control-plane page were
 * already given out, and which item comes next. Whoever holds one learns nothing from it (not the namespaces, not
 * the hashes the control plane's positions carry, not how many items lie between two pages): a token's length
 * depends only on what the caller was shown, and any change to it fails authentication.
 *
 * Every replica must open the others' tokens (the Service spreads one listing over both), so the key is derived
 * (HKDF-SHA-256) from what the replicas already share: the user port's TLS private key, from the Secret both read.
 * The two latest keys are kept, so a certificate renewal does not break a listing under way. A token sealed with a
 * key this replica does not hold (a replica that has not re-read the renewed Secret yet, a relay restarted with
 * plain HTTP, whose key is its own) is answered 410 Expired: restart the listing, as Kubernetes asks.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes as cryptoRandomBytes } from 'node:crypto';
import { BadRequestError } from '../errors';
import { PageTokenExpiredError } from './errors';

/** Where a page starts. */
export interface PagePosition {
  /** The control plane's continue token of the page to read from; absent: the start of the list. */
  readonly upstream?: string;
  /** Items of that control-plane page that come before this position. */
  readonly skip: number;
  /** The identity of the item the page starts with (`namespace/name`), looked for first should the page have moved. */
  readonly first?: string;
}

export interface PageTokenOptions {
  /** Secret material every replica holds alike (the user port's TLS private key); undefined: a key of this process only. */
  readonly sharedSecret: () => string | undefined;
  readonly randomBytes?: (size: number) => Buffer;
}

const VERSION = 1;
const KEY_ID_BYTES = 4;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + NONCE_BYTES;
/**
 * Room kept for the control plane's token: it carries positions among items the caller may not see, so its length
 * must not show through. Its tokens are shorter (a node name of 253 characters makes about 380 characters).
 */
const UPSTREAM_SLOT = 384;
/** The sealed text is padded to a multiple of this. */
const PAD_TO = 64;
/** Longer tokens are refused unread. */
export const MAX_TOKEN_CHARS = 4096;
/** Keys kept: the current one and the one before (a renewal of the certificate). */
const KEYS_KEPT = 2;

const INVALID = 'continue token is not valid: pass the metadata.continue of the previous page unchanged';
const OTHER_LIST = 'continue token belongs to another list';
const EXPIRED = 'continue token has expired (issued under a key this relay no longer holds): start the listing again without continue';

interface Key {
  readonly id: Buffer;
  readonly key: Buffer;
  readonly secret: string | undefined;
}

function deriveKey(secret: Buffer, origin: string | undefined): Key {
  const salt = Buffer.from('hami-relay page tokens', 'utf8');
  return {
    key: Buffer.from(hkdfSync('sha256', secret, salt, Buffer.from('aes-256-gcm key v1', 'utf8'), 32)),
    id: Buffer.from(hkdfSync('sha256', secret, salt, Buffer.from('key id v1', 'utf8'), KEY_ID_BYTES)),
    secret: origin,
  };
}

export class PageTokens {
  private readonly randomBytes: (size: number) => Buffer;
  /** Newest first. */
  private keys: Key[] = [];
  private ownKey: Key | undefined;

  constructor(private readonly options: PageTokenOptions) {
    this.randomBytes = options.randomBytes ?? cryptoRandomBytes;
  }

  /** The token for `position` in the list `list` (e.g. `schedulerlogs`, `schedulerlogs/team-a`, `nodes`). */
  seal(list: string, position: PagePosition): string {
    const key = this.currentKey();
    const upstream = Buffer.from(position.upstream ?? '', 'utf8');
    const meta = Buffer.from(JSON.stringify({ l: list, ...(position.first !== undefined ? { f: position.first } : {}) }), 'utf8');
    if (!Number.isInteger(position.skip) || position.skip < 0 || position.skip > 0xffff) throw new RangeError(`page position skip ${position.skip} out of range`);
    const slot = Math.max(UPSTREAM_SLOT, upstream.length);
    const used = 1 + 2 + 2 + slot + 2 + meta.length;
    const plain = Buffer.alloc(Math.ceil(used / PAD_TO) * PAD_TO);
    let at = plain.writeUInt8(position.upstream !== undefined ? 1 : 0, 0);
    at = plain.writeUInt16BE(position.skip, at);
    at = plain.writeUInt16BE(upstream.length, at);
    upstream.copy(plain, at);
    at = plain.writeUInt16BE(meta.length, at + slot);
    meta.copy(plain, at);
    const nonce = this.randomBytes(NONCE_BYTES);
    const header = Buffer.concat([Buffer.from([VERSION]), key.id, nonce]);
    const cipher = createCipheriv('aes-256-gcm', key.key, nonce);
    cipher.setAAD(header);
    const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([header, sealed, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * The position a token names, if it was sealed for this list. A token that is not one, was changed, or belongs to
   * another list is a BadRequestError (400); one sealed under a key no longer held, a PageTokenExpiredError (410).
   */
  open(list: string, token: string): PagePosition {
    if (token.length > MAX_TOKEN_CHARS || !/^[A-Za-z0-9_-]+$/.test(token)) throw new BadRequestError(INVALID);
    const raw = Buffer.from(token, 'base64url');
    if (raw.length < HEADER_BYTES + PAD_TO + TAG_BYTES || raw[0] !== VERSION) throw new BadRequestError(INVALID);
    const header = raw.subarray(0, HEADER_BYTES);
    const id = header.subarray(1, 1 + KEY_ID_BYTES);
    this.currentKey();
    const key = this.keys.find((k) => k.id.equals(id));
    if (key === undefined) throw new PageTokenExpiredError(EXPIRED);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, header.subarray(1 + KEY_ID_BYTES));
      decipher.setAAD(header);
      decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
      plain = Buffer.concat([decipher.update(raw.subarray(HEADER_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new BadRequestError(INVALID);
    }
    // Authenticated, so sealed by a relay: what follows was written by seal() above.
    const flags = plain.readUInt8(0);
    const skip = plain.readUInt16BE(1);
    const upstreamLength = plain.readUInt16BE(3);
    const upstream = plain.subarray(5, 5 + upstreamLength).toString('utf8');
    const metaAt = 5 + Math.max(UPSTREAM_SLOT, upstreamLength);
    const meta = JSON.parse(plain.subarray(metaAt + 2, metaAt + 2 + plain.readUInt16BE(metaAt)).toString('utf8')) as { l: string; f?: string };
    if (meta.l !== list) throw new BadRequestError(OTHER_LIST);
    return { ...((flags & 1) === 1 ? { upstream } : {}), skip, ...(meta.f !== undefined ? { first: meta.f } : {}) };
  }

  /** The key from the shared secret as it is now (remembering the one before), or this process's own. */
  private currentKey(): Key {
    const secret = this.options.sharedSecret();
    if (secret === undefined) {
      this.ownKey ??= deriveKey(this.randomBytes(32), undefined);
      if (!this.keys.includes(this.ownKey)) this.keys = [this.ownKey, ...this.keys].slice(0, KEYS_KEPT);
      return this.ownKey;
    }
    const newest = this.keys[0];
    if (newest !== undefined && newest.secret === secret) return newest;
    const kept = this.keys.find((k) => k.secret === secret);
    const key = kept ?? deriveKey(Buffer.from(secret, 'utf8'), secret);
    this.keys = [key, ...this.keys.filter((k) => k !== key)].slice(0, KEYS_KEPT);
    return key;
  }
}
