/**
 * Brute-force limits of POST /auth/login: failed attempts are counted per account (the email, known
 * or not) and per client IP over a window; past the limit the key is locked until the window has
 * passed its oldest counted failure. In memory, per process (documented in docs/auth.md).
 */
import type { Clock } from '../clock.js';

export interface LoginLimits {
  maxFailuresPerAccount: number;
  maxFailuresPerIp: number;
  lockSeconds: number;
}

const MAX_KEYS = 100_000;

export class LoginLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limits: LoginLimits,
    private readonly clock: Clock,
  ) {}

  /** Seconds until the account or IP may try again, or 0 when it may try now. */
  retryAfter(account: string, ip: string): number {
    return Math.max(this.wait(`a:${account}`, this.limits.maxFailuresPerAccount), this.wait(`i:${ip}`, this.limits.maxFailuresPerIp));
  }

  fail(account: string, ip: string): void {
    for (const key of [`a:${account}`, `i:${ip}`]) {
      const list = this.recent(key);
      list.push(this.clock.now());
      this.failures.set(key, list);
    }
    if (this.failures.size > MAX_KEYS) this.sweep();
  }

  /** A successful sign-in clears the account's count (not the IP's: one good password must not reset a spray). */
  succeed(account: string): void {
    this.failures.delete(`a:${account}`);
  }

  private wait(key: string, max: number): number {
    const list = this.recent(key);
    if (list.length < max) return 0;
    const unlockAt = list[list.length - max]! + this.limits.lockSeconds * 1000;
    return Math.max(1, Math.ceil((unlockAt - this.clock.now()) / 1000));
  }

  private recent(key: string): number[] {
    const since = this.clock.now() - this.limits.lockSeconds * 1000;
    return (this.failures.get(key) ?? []).filter((at) => at > since);
  }

  private sweep(): void {
    for (const key of [...this.failures.keys()]) {
      if (this.recent(key).length === 0) this.failures.delete(key);
    }
  }
}
