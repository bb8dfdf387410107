/** Time, randomness and ids come from here so tests can control them. */
import { randomBytes, randomUUID } from 'node:crypto';

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

export const systemIds: IdSource = {
  id: () => randomUUID(),
  secret: (bytes = 32) => randomBytes(bytes).toString('base64url'),
};

export const newId = (): string => systemIds.id();

export function randomToken(bytes = 32): string {
  return systemIds.secret(bytes);
}
