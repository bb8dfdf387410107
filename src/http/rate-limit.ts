/**
 * Sliding-window rate limits per client IP and per API key. The window is an exact log of request
 * times: in memory by default, in a Redis sorted set (one Lua script, so several gateway processes
 * share one limit) when KV_STORE_URL is set. Both libraries we looked at ship fixed windows only.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface LimitDecision {
  allowed: boolean;
  remaining: number;
  /** Seconds until one more request would be allowed (0 when allowed). */
  retryAfter: number;
}

export interface SlidingWindowStore {
  /** The decision, or a promise of it when the store must ask elsewhere (Redis). */
  hit(key: string, limit: number, windowMs: number, now: number): LimitDecision | Promise<LimitDecision>;
}

function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export class MemoryWindowStore implements SlidingWindowStore {
  private readonly logs = new Map<string, number[]>();
  private lastSweep = 0;

  /** Answered at once: the auth hook awaits nothing for it. */
  hit(key: string, limit: number, windowMs: number, now: number): LimitDecision {
    this.sweep(windowMs, now);
    let log = this.logs.get(key);
    if (!log) {
      log = [];
      this.logs.set(key, log);
    }
    const cutoff = now - windowMs;
    let expired = 0;
    while (expired < log.length && log[expired]! <= cutoff) expired++;
    if (expired > 0) log.splice(0, expired);
    if (log.length < limit) {
      log.push(now);
      return { allowed: true, remaining: limit - log.length, retryAfter: 0 };
    }
    return { allowed: false, remaining: 0, retryAfter: retryAfterSeconds(log[0]! + windowMs - now) };
  }

  /** Drops idle keys once per window so memory follows the active clients only. */
  private sweep(windowMs: number, now: number): void {
    if (now - this.lastSweep < windowMs) return;
    this.lastSweep = now;
    for (const [key, log] of this.logs) {
      if (log.length === 0 || log[log.length - 1]! <= now - windowMs) this.logs.delete(key);
    }
  }
}

const SLIDING_WINDOW_SCRIPT = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
if count < limit then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  return {1, limit - count - 1, 0}
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {0, 0, tonumber(oldest[2]) + window - now}
`;

/**
 * Shared limits in Redis. While Redis is unreachable each process falls back to its own memory
 * window: limits keep holding per process, and the API keeps answering instead of failing every
 * request because a counter store is down.
 */
export class RedisWindowStore implements SlidingWindowStore {
  private readonly fallback = new MemoryWindowStore();
  private failing = false;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly onStateChange: (shared: boolean, error?: Error) => void = () => undefined,
  ) {
    redis.defineCommand('waygateSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW_SCRIPT });
  }

  async hit(key: string, limit: number, windowMs: number, now: number): Promise<LimitDecision> {
    if (this.redis.status !== 'ready') {
      this.markFailing();
      return this.fallback.hit(key, limit, windowMs, now);
    }
    const run = (this.redis as unknown as Record<string, (...args: unknown[]) => Promise<[number, number, number]>>).waygateSlidingWindow!;
    try {
      const [allowed, remaining, waitMs] = await run.call(this.redis, this.prefix + key, now, windowMs, limit, `${now}-${randomUUID()}`);
      if (this.failing) {
        this.failing = false;
        this.onStateChange(true);
      }
      return { allowed: allowed === 1, remaining, retryAfter: allowed === 1 ? 0 : retryAfterSeconds(waitMs) };
    } catch (error) {
      this.markFailing(error as Error);
      return this.fallback.hit(key, limit, windowMs, now);
    }
  }

  private markFailing(error?: Error): void {
    if (this.failing) return;
    this.failing = true;
    this.onStateChange(false, error);
  }
}
