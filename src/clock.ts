/** Time, randomness and ids come from here so tests can control them. */
import { randomBytes, randomFillSync } from 'node:crypto';

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told; for tests. */
export class ManualClock implements Clock {
  constructor(private current = Date.parse('2026-06-01T00:00:00Z')) {}
  now(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/** The second `isoTime` formatted last, and its text up to the milliseconds. */
let isoSecond = Number.NaN;
let isoPrefix = '';

/**
 * `new Date(ms).toISOString()`, the text up to the second kept from the previous call: V8's date
 * formatting was 1.3 % of the send road's main thread, and a busy gateway stamps many events in the
 * same second. Anything but an integer of years 0-9999 is formatted by Date itself (so it throws as
 * Date does for NaN).
 */
export function isoTime(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== isoSecond) {
    const iso = new Date(second * 1000).toISOString();
    // 'YYYY-MM-DDTHH:MM:SS.000Z': other years are written with six digits and a sign.
    if (iso.length !== 24) return new Date(ms).toISOString();
    isoSecond = second;
    isoPrefix = iso.slice(0, 20);
  }
  const millis = ms - second * 1000;
  return `${isoPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/** `isoTime`, or null for a time that is not set (a row's nullable column). */
export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}

/** A number in [0, 1); tests pass their own. */
export type Random = () => number;

export const systemRandom: Random = () => Math.random();

/** Where ids and secrets come from; services take one (default systemIds) so tests can pass their own. */
export interface IdSource {
  /** A UUID-shaped identifier (instances, events, dead letters, batches). */
  id(): string;
  /** `bytes` random bytes as base64url (tokens, webhook secrets). */
  secret(bytes?: number): string;
}

/** Random bytes drawn at a time by TimeOrderedIds: 512 ids' worth. */
const POOL_BYTES = 4096;

/**
 * Time-ordered UUIDs (version 7, RFC 9562): 48 bits of Unix milliseconds, a 12-bit counter that
 * keeps ids of the same millisecond in order (method 1 of the RFC), then 62 random bits. Ids made
 * later sort later, so each insert into an index on them (outbox.event_id, the tables' primary keys)
 * lands on the index's last page instead of a random one: a commit writes a few pages, not one per row.
 * Not secrets (see `secret`).
 */
export class TimeOrderedIds {
  private lastMs = 0;
  private counter = 0;
  /** Random bytes drawn 4 KB at a time: one call per id cost 3.5 % of the send road's CPU. */
  private readonly pool = Buffer.alloc(POOL_BYTES);
  private used = POOL_BYTES;
  private readonly scratch = Buffer.alloc(16);

  constructor(private readonly now: () => number = Date.now) {}

  /** The next id as a UUID (`xxxxxxxx-xxxx-7xxx-…`). */
  next(): string {
    const hex = this.nextBytes().toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }

  /** The next id as 32 upper-case hex digits, no dashes (the sandbox's message ids). */
  nextHex(): string {
    return this.nextBytes().toString('hex').toUpperCase();
  }

  /** The 16 bytes of the next id, in a buffer reused by the next call. */
  private nextBytes(): Buffer {
    let ms = this.now();
    if (ms <= this.lastMs) {
      // The same millisecond (or a clock stepped back): the counter orders them; when it runs out,
      // the id borrows the next millisecond, as the RFC allows.
      ms = this.lastMs;
      this.counter += 1;
      if (this.counter > 0xfff) {
        ms += 1;
        this.counter = 0;
      }
    } else {
      this.counter = 0;
    }
    this.lastMs = ms;
    const bytes = this.scratch;
    bytes.writeUIntBE(ms, 0, 6);
    if (this.used === POOL_BYTES) {
      randomFillSync(this.pool);
      this.used = 0;
    }
    this.pool.copy(bytes, 8, this.used, this.used + 8);
    this.used += 8;
    bytes[6] = 0x70 | (this.counter >> 8);
    bytes[7] = this.counter & 0xff;
    bytes[8] = 0x80 | (bytes[8]! & 0x3f);
    return bytes;
  }
}

const timeOrdered = new TimeOrderedIds();

export const systemIds: IdSource = {
  id: () => timeOrdered.next(),
  secret: (bytes = 32) => randomBytes(bytes).toString('base64url'),
};

export const newId = (): string => systemIds.id();

/** `newId()`'s digits without dashes, upper-case: the same order, without formatting a UUID first. */
export const newHexId = (): string => timeOrdered.nextHex();

export function randomToken(bytes = 32): string {
  return systemIds.secret(bytes);
}
