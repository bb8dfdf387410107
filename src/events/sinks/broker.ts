/**
 * What the broker sinks (AMQP, Redis, NATS, MQTT) share: their options, the connection state they
 * report to /server/ok and /metrics, and a publish deadline. Brokers never give up on an event
 * (maxAttempts null): the outbox keeps it until the broker confirms it.
 */
import type { FastifyBaseLogger } from 'fastify';
import { DeliveryError, type RetryPolicy } from '../sink.js';

export interface BrokerSinkOptions {
  /** Backoff between attempts of one event; maxAttempts is always null for brokers. */
  retry: RetryPolicy;
  /** A publish the broker has not confirmed within this is a failed attempt (retried). */
  publishTimeoutMs: number;
  log: FastifyBaseLogger;
}

export interface ChannelHealth {
  up: boolean;
  detail?: string;
}

/**
 * Connection state of one channel. Logs only the transitions (up -> down -> up), so a broker that is
 * down for hours costs one warning, not one per reconnect attempt.
 */
export class LinkState {
  private up = false;
  private detail = 'connecting';
  private warnedDown = false;
  /** Deliveries waiting for the connection (see whenUp). */
  private readonly waiting = new Set<() => void>();

  constructor(
    private readonly channel: string,
    private readonly log: FastifyBaseLogger,
  ) {}

  get isUp(): boolean {
    return this.up;
  }

  connected(detail?: string): void {
    if (!this.up) this.log.info({ channel: this.channel, detail }, 'event channel connected');
    this.up = true;
    this.warnedDown = false;
    this.detail = detail ?? '';
    for (const wake of this.waiting) wake();
    this.waiting.clear();
  }

  /**
   * Resolves once connected, or fails the attempt after `ms`. A lane that meets a broker being down
   * waits here instead of sleeping through its backoff, so it goes on the moment the broker is back.
   */
  async whenUp(ms: number): Promise<void> {
    if (this.up) return;
    let wake: (() => void) | undefined;
    const connected = new Promise<void>((resolve) => {
      wake = resolve;
      this.waiting.add(resolve);
    });
    try {
      await withDeadline(connected, ms, `${this.channel} not connected`);
    } catch {
      throw new DeliveryError(`${this.channel} not connected: ${this.detail}`);
    } finally {
      if (wake) this.waiting.delete(wake);
    }
  }

  /** Connection lost or an attempt failed; the client library keeps reconnecting. */
  down(reason: string): void {
    if (this.up || !this.warnedDown) {
      this.log.warn({ channel: this.channel, reason }, 'event channel not connected; retrying');
      this.warnedDown = true;
    }
    this.up = false;
    this.detail = reason;
  }

  /** Lets every waiting delivery go on at once (the sink is closing; they fail fast instead of waiting). */
  releaseWaiting(): void {
    for (const wake of this.waiting) wake();
    this.waiting.clear();
  }

  /** Refines the detail while down (e.g. the error behind a close), without logging again. */
  note(reason: string): void {
    if (!this.up) this.detail = reason;
  }

  health(): ChannelHealth {
    return this.detail ? { up: this.up, detail: this.detail } : { up: this.up };
  }
}

/** Rejects with a DeliveryError when `promise` has not settled within `ms`; the timer never holds the process. */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeliveryError(`${what}: no confirmation within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** A short, credential-free description of a client library error for health and logs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message = error.message.replace(/\/\/[^@/\s]*@/g, '//***@');
    return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
  }
  return String(error);
}

/** Waits `ms` unless `signal` fires first (used by reconnect loops that must stop on close). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
