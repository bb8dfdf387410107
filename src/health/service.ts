/**
 * Health scores: every instance gets 0 to 100 with the reasons that lowered it, from signals the
 * gateway already sees — the connection state and why it last closed, connection flaps, send
 * failures, refusals and latency (observed on the sending service), and the delivery backlog and
 * dead letters of its events. Connection and send signals are kept in memory as they happen (a
 * restart starts them afresh); backlog counts are read from the database at most once per
 * HEALTH_INTERVAL_MS. The formula is `healthScore` below (docs/operations.md explains it).
 */
import type { Clock } from '../clock.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import type { ConnectionData, InstanceStatus } from '../network/port.js';
import type { MessagingService, SendAttempt } from '../outgoing/service.js';
import type { SessionRegistry } from '../sessions/registry.js';
import type { HealthSource } from '../modules.js';
import type { BacklogCounts } from './repo.js';

/** Sends (failures, refusals, latency) count for this long. */
export const SEND_WINDOW_MS = 5 * 60_000;
/** A connection that was lost counts as a flap for this long. */
export const FLAP_WINDOW_MS = 15 * 60_000;
/** Sends are counted in steps of this length (a score reads 30 sums, never a list of sends). */
const BUCKET_MS = 10_000;

export interface HealthSignals {
  status: InstanceStatus;
  /** The CONNECTION `reason` of the last change away from CONNECTED (e.g. `banned_or_blocked`). */
  lastDisconnect: string | null;
  /** Times the instance left CONNECTED within FLAP_WINDOW_MS (bounded: one loss each time it connected). */
  flaps: number;
  /** Send attempts within SEND_WINDOW_MS (the caller's own mistakes, such as bad input, not counted). */
  sends: number;
  /** Failed on the way (network errors), or rejected by the network after it accepted them (WhatsApp). */
  failures: number;
  /** Of those, refused before reaching the network (not connected, network rate limit). */
  refusals: number;
  /** Mean time of the successful sends in the window; null without any. */
  latencyMs: number | null;
  /** Events of the instance waiting for delivery, over all channels. */
  backlog: number;
  deadLetters: number;
}

export interface HealthScore {
  score: number;
  reasons: string[];
}

/** Penalty of a connection state (when no disconnect class says more). */
const STATUS_PENALTY: Record<InstanceStatus, number> = {
  CONNECTED: 0,
  CONNECTING: 40,
  DISCONNECTED: 70,
  QRCODE: 100,
  created: 100,
  LOGGED_OUT: 100,
};

/**
 * Penalty by why the connection closed, while the instance is not connected: some closes heal by
 * themselves in a moment (restart_required), some never do without a person (banned, logged out).
 */
const DISCONNECT_PENALTY: Record<string, number> = {
  restart_required: 20,
  banned_or_blocked: 100,
  logged_out: 100,
  logged_out_from_phone: 100,
  device_removed: 100,
  qr_attempts_exhausted: 100,
  connection_replaced: 90,
  multidevice_mismatch: 90,
};

const STATUS_TEXT: Record<InstanceStatus, string> = {
  CONNECTED: 'connected',
  CONNECTING: 'connecting',
  DISCONNECTED: 'disconnected',
  QRCODE: 'waiting for a QR scan',
  created: 'never connected',
  LOGGED_OUT: 'logged out',
};

export const PENALTIES = {
  perFlap: 10,
  maxFlaps: 30,
  /** Scaled by failures / max(sends, MIN_SAMPLE): an instance whose every send fails falls below the default minHealth 50. */
  failures: 60,
  refusals: 30,
  minSample: 5,
  /** Mean latency thresholds (ms) and their penalties, worst first. */
  latency: [
    [5000, 20],
    [2000, 10],
    [1000, 5],
  ] as [number, number][],
  backlog: [
    [1000, 15],
    [100, 5],
  ] as [number, number][],
  deadLetters: [
    [100, 10],
    [1, 5],
  ] as [number, number][],
};

function stepPenalty(value: number, steps: [number, number][]): number {
  for (const [threshold, penalty] of steps) if (value >= threshold) return penalty;
  return 0;
}

/** The formula: 100 minus the penalties of each signal, floored at 0. Pure, so tests pin it. */
export function healthScore(s: HealthSignals): HealthScore {
  const reasons: string[] = [];
  let score = 100;
  // Each reason is written only when it costs points: a group send scores its members, most of them healthy.
  const take = (penalty: number, reason: () => string) => {
    if (penalty <= 0) return;
    score -= penalty;
    reasons.push(`${reason()} (-${penalty})`);
  };
  if (s.status !== 'CONNECTED') {
    const byClass = s.lastDisconnect !== null ? DISCONNECT_PENALTY[s.lastDisconnect] : undefined;
    const why = s.lastDisconnect !== null ? `: ${s.lastDisconnect}` : '';
    take(byClass ?? STATUS_PENALTY[s.status], () => `${STATUS_TEXT[s.status]}${why}`);
  }
  take(Math.min(PENALTIES.maxFlaps, s.flaps * PENALTIES.perFlap), () => `${s.flaps} connection loss(es) in ${FLAP_WINDOW_MS / 60_000} min`);
  const sample = Math.max(s.sends, PENALTIES.minSample);
  take(
    Math.round(PENALTIES.failures * Math.min(1, s.failures / sample)),
    () => `${s.failures} of ${s.sends} sends failed in ${SEND_WINDOW_MS / 60_000} min`,
  );
  take(
    Math.round((PENALTIES.refusals * s.refusals) / sample),
    () => `${s.refusals} of ${s.sends} sends refused in ${SEND_WINDOW_MS / 60_000} min`,
  );
  if (s.latencyMs !== null) {
    const latencyMs = s.latencyMs;
    take(stepPenalty(latencyMs, PENALTIES.latency), () => `mean send time ${Math.round(latencyMs)} ms`);
  }
  take(stepPenalty(s.backlog, PENALTIES.backlog), () => `${s.backlog} events waiting for delivery`);
  take(stepPenalty(s.deadLetters, PENALTIES.deadLetters), () => `${s.deadLetters} dead letters`);
  return { score: Math.max(0, score), reasons };
}

/** The sends of one BUCKET_MS step. */
interface SendBucket {
  start: number;
  sends: number;
  failures: number;
  refusals: number;
  sent: number;
  sentMs: number;
}

interface Observed {
  /** The last CONNECTION status seen (ahead of the stored one, which is written a moment later). */
  status?: InstanceStatus;
  lastDisconnect: string | null;
  lostAt: number[];
  /** Oldest first; steps older than SEND_WINDOW_MS are dropped when read or written. */
  buckets: SendBucket[];
}

export interface HealthReport extends HealthScore {
  instanceId: string;
  signals: HealthSignals;
  evaluatedAt: string;
}

export interface HealthDeps {
  instances: InstanceService;
  clock: Clock;
  /** Reads the backlog and dead letters of every instance (health/repo.ts). */
  backlog: () => Promise<BacklogCounts>;
  /** Backlog counts are read again when older than this. */
  intervalMs: number;
}

export class HealthService implements HealthSource {
  private readonly observed = new Map<string, Observed>();
  private counts: BacklogCounts = { backlog: new Map(), deadLetters: new Map() };
  private countedAt = Number.NEGATIVE_INFINITY;
  private counting: Promise<void> | undefined;

  constructor(private readonly deps: HealthDeps) {}

  /**
   * Starts hearing the signals: CONNECTION events from the sessions (every event, before any
   * instance filter drops it, unlike the bus) and every send attempt from the sending service.
   */
  watch(sessions: SessionRegistry, sending: MessagingService): void {
    sessions.observe((instanceId, event) => {
      if (event.type === 'CONNECTION') this.connectionChanged(instanceId, event.data);
      // WhatsApp: a send it accepted and then rejected (SEND_MESSAGE `FAILED`) is a failure too.
      else if (event.type === 'SEND_MESSAGE' && event.data.status === 'FAILED') this.sendFailedLater(instanceId);
    });
    sending.onAttempt((attempt) => this.sendAttempted(attempt));
    this.deps.instances.onDeletion({ instanceDeleted: (id) => this.forget(id) });
  }

  /** A CONNECTION event of an instance. */
  connectionChanged(instanceId: string, data: ConnectionData): void {
    const state = this.stateOf(instanceId);
    const was = state.status;
    state.status = data.status;
    if (data.status === 'CONNECTED') {
      state.lastDisconnect = null;
    } else if (was === 'CONNECTED' || data.reason !== undefined) {
      if (data.reason !== undefined) state.lastDisconnect = data.reason;
      if (was === 'CONNECTED') {
        const now = this.deps.clock.now();
        state.lostAt.push(now);
        prune(state.lostAt, (at) => at > now - FLAP_WINDOW_MS);
      }
    }
  }

  /** An attempt to send (MessagingService.onAttempt). */
  sendAttempted(attempt: SendAttempt): void {
    if (attempt.outcome === 'rejected') return;
    const bucket = this.bucketOf(this.stateOf(attempt.instanceId));
    bucket.sends += 1;
    if (attempt.outcome === 'failed') bucket.failures += 1;
    else if (attempt.outcome === 'refused') bucket.refusals += 1;
    else {
      bucket.sent += 1;
      bucket.sentMs += attempt.ms;
    }
  }

  /** A send the network accepted, then rejected: one more failure (its attempt already counted as a send). */
  sendFailedLater(instanceId: string): void {
    this.bucketOf(this.stateOf(instanceId)).failures += 1;
  }

  forget(instanceId: string): void {
    this.observed.delete(instanceId);
  }

  async scoreOf(instanceId: string): Promise<HealthScore> {
    return healthScore(await this.signalsOf(await this.deps.instances.get(instanceId)));
  }

  /** The score of an instance already loaded (lists, metrics). */
  async scoreOfInstance(instance: Instance): Promise<HealthScore> {
    return healthScore(await this.signalsOf(instance));
  }

  async report(instanceId: string): Promise<HealthReport> {
    const signals = await this.signalsOf(await this.deps.instances.get(instanceId));
    return { instanceId, ...healthScore(signals), signals, evaluatedAt: new Date(this.deps.clock.now()).toISOString() };
  }

  async signalsOf(instance: Instance): Promise<HealthSignals> {
    await this.freshCounts();
    const now = this.deps.clock.now();
    const state = this.observed.get(instance.id);
    const lostAt = state ? prune(state.lostAt, (at) => at > now - FLAP_WINDOW_MS) : [];
    const sum = { sends: 0, failures: 0, refusals: 0, sent: 0, sentMs: 0 };
    for (const bucket of state ? prune(state.buckets, (b) => b.start > now - SEND_WINDOW_MS) : []) {
      sum.sends += bucket.sends;
      sum.failures += bucket.failures;
      sum.refusals += bucket.refusals;
      sum.sent += bucket.sent;
      sum.sentMs += bucket.sentMs;
    }
    return {
      status: state?.status ?? instance.status,
      lastDisconnect: state?.lastDisconnect ?? null,
      flaps: lostAt.length,
      sends: sum.sends,
      failures: sum.failures,
      refusals: sum.refusals,
      latencyMs: sum.sent > 0 ? sum.sentMs / sum.sent : null,
      backlog: this.counts.backlog.get(instance.id) ?? 0,
      deadLetters: this.counts.deadLetters.get(instance.id) ?? 0,
    };
  }

  /**
   * Backlog counts at most HEALTH_INTERVAL_MS old: the first call waits for them, later ones use the
   * last counts while fresh ones are read in the background (a send never waits for a count).
   */
  private async freshCounts(): Promise<void> {
    if (this.deps.clock.now() - this.countedAt < this.deps.intervalMs) return;
    if (!this.counting) {
      this.counting = this.deps
        .backlog()
        .then((counts) => {
          this.counts = counts;
          this.countedAt = this.deps.clock.now();
        })
        // Storage trouble: keep the last counts (a score must not fail because a count did).
        .catch(() => undefined)
        .finally(() => {
          this.counting = undefined;
        });
    }
    if (this.countedAt === Number.NEGATIVE_INFINITY) await this.counting;
  }

  private bucketOf(state: Observed): SendBucket {
    const now = this.deps.clock.now();
    const start = now - (now % BUCKET_MS);
    let bucket = state.buckets.at(-1);
    if (bucket?.start !== start) {
      bucket = { start, sends: 0, failures: 0, refusals: 0, sent: 0, sentMs: 0 };
      state.buckets.push(bucket);
      prune(state.buckets, (b) => b.start > now - SEND_WINDOW_MS);
    }
    return bucket;
  }

  private stateOf(instanceId: string): Observed {
    let state = this.observed.get(instanceId);
    if (!state) {
      state = { lastDisconnect: null, lostAt: [], buckets: [] };
      this.observed.set(instanceId, state);
    }
    return state;
  }
}

/** Drops the entries `keep` refuses from the front of a time-ordered list, in place. */
function prune<T>(list: T[], keep: (item: T) => boolean): T[] {
  let first = 0;
  while (first < list.length && !keep(list[first]!)) first += 1;
  if (first > 0) list.splice(0, first);
  return list;
}
