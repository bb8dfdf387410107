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

export const newId = (): string => randomUUID();

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}
