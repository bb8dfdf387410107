/**
 * The one retry rule: how long to wait before the next attempt. Used by event deliveries
 * (events/dispatcher.ts), broker reconnects (events/sinks/) and WhatsApp reconnects
 * (network/whatsapp/policy.ts). Randomness is passed in, so tests choose it.
 */
import { systemRandom, type Random } from './clock.js';

export interface Backoff {
  /** The first wait, before jitter. */
  baseMs: number;
  /** No wait is longer. */
  maxMs: number;
}

/**
 * Capped exponential backoff with "equal jitter": the step doubles per retry from `baseMs` up to
 * `maxMs`; the wait is half the step plus a random share of the other half, so many retries spread
 * out but none comes back too soon. `retry` counts from 0 (the first retry waits about `baseMs`).
 */
export function backoffDelay(backoff: Backoff, retry: number, random: Random = systemRandom): number {
  const step = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(Math.max(0, retry), 30));
  return Math.round(step / 2 + (step / 2) * random());
}
