/** Instance tokens: 32 random bytes as base64url behind a fixed prefix; only their SHA-256 is stored. */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { RecentlyUsedMap } from '../bounded-maps.js';
import { systemIds, type IdSource } from '../clock.js';

export const TOKEN_PREFIX = 'wgt_';
/** 4-char prefix + 43 base64url chars (32 bytes). */
export const TOKEN_LENGTH = TOKEN_PREFIX.length + 43;
const TOKEN_SHAPE = /^wgt_[A-Za-z0-9_-]{43}$/;

export function newInstanceToken(ids: IdSource = systemIds): string {
  return TOKEN_PREFIX + ids.secret(32);
}

/** True when the value could be an instance token; anything else is refused before a lookup. */
export function isWellFormedToken(value: string): boolean {
  return value.length === TOKEN_LENGTH && TOKEN_SHAPE.test(value);
}

/** A token's (or key's) stored form, SHA-256 as hex: the one-shot `hash` costs a third of a Hash object. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Keys longer than this are hashed every time and never kept (an instance token is 47 characters). */
const REMEMBERED_KEY_LENGTH = 128;

/**
 * hashToken for the keys of incoming requests, remembered: a client sends the same key with every
 * request, and its SHA-256 was ~1.7 % of the send road's main thread. Bounded (nearly least recently
 * used goes first), so keys sprayed by a scanner only push out older digests; a digest never goes
 * stale (it depends on the key alone).
 */
export class KeyDigests {
  private readonly digests: RecentlyUsedMap<string, string>;

  constructor(limit: number) {
    this.digests = new RecentlyUsedMap(limit);
  }

  of(key: string): string {
    const known = this.digests.get(key);
    if (known !== undefined) return known;
    const digest = hashToken(key);
    if (key.length <= REMEMBERED_KEY_LENGTH) this.digests.set(key, digest);
    return digest;
  }

  get size(): number {
    return this.digests.size;
  }
}

/** Constant-time comparison for the admin key (hashing first makes the lengths equal). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
