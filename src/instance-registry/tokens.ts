/** Instance tokens: 32 random bytes as base64url behind a fixed prefix; only their SHA-256 is stored. */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
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

/** Every authenticated request hashes its token: the one-shot `hash` costs a third of a Hash object. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Constant-time comparison for the admin key (hashing first makes the lengths equal). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
