/**
 * Drains the outbox into the durable sinks. Each (sink, instance) pair is one lane that delivers
 * strictly in sequence order: a failing event is retried (backoff with jitter) before the next one
 * goes, and after the sink's last attempt it becomes a dead letter. Lanes read from the database in
 * pages, so a receiver that is down for hours costs rows, not memory. After a restart every lane with
 * pending rows resumes.
 */
import type { FastifyBaseLogger } from 'fastify';
import { systemIds, type Clock, type IdSource, type Random } from '../clock.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { DeadLetterStore } from './dead-letters.js';
import type { OutboxEntry } from './envelope.js';
import type { LanePage, OutboxStore, PendingDelivery } from './outbox.js';
import { TurnBatch } from './turn-batch.js';
import { backoffDelay } from '../retry.js';
import { DeliveryError, type DurableSink } from './sink.js';

const PAGE = 100;

export interface DispatcherOptions {
  outbox: OutboxStore;
  deadLetters: DeadLetterStore;
  instances: InstanceService;
  sinks: DurableSink[];
  clock: Clock;
  log: FastifyBaseLogger;
  /** Waits; injectable so tests control retry timing. */
  sleep?: (ms: number) => Promise<void>;
  /** Dead-letter ids; systemIds unless a test passes its own. */
  ids?: IdSource;
  /** Retry jitter; systemRandom unless a test passes its own. */
  random?: Random;
  /** Told about every delivery attempt (metrics). */
  observer?: DeliveryObserver;
}

/** Sees each delivery attempt: `events` is 1, or the size of a batch. */
export interface DeliveryObserver {
  attempted(sink: string, events: number, outcome: 'delivered' | 'failed', seconds: number): void;
  deadLettered(sink: string, events: number): void;
}

interface Lane {
  running: boolean;
  /** Delivered but not yet deleted from outbox_pending: acknowledged in one statement per batch. */
  acked: number[];
  /** Set when new events arrived while the lane was busy, so it reads again before stopping. */
  dirty: boolean;
  wake?: () => void;
  /** Events notified while a batch waits to fill (batched sinks). */
  arrivals: number;
  onArrival?: () => void;
  /** Its instance moves to another process (releaseInstance): stop after the delivery under way. */
  halted?: boolean;
  /** The running loop (releaseInstance waits for it). */
  finished?: Promise<void>;
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

export class OutboxDispatcher {
  private readonly lanes = new Map<string, Lane>();
  private readonly sinks: Map<string, DurableSink>;
  private stopped = false;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly idle = new Set<() => void>();
  private owned: (instanceId: string) => boolean = () => true;
  /** Lanes' page reads and acknowledgements, shared by the lanes that make them together (turn-batch.ts). */
  private readonly pageReads: TurnBatch<LanePage, PendingDelivery[]>;
  private readonly acknowledgements: TurnBatch<{ sink: string; seqs: number[] }, undefined>;

  constructor(private readonly options: DispatcherOptions) {
    this.sinks = new Map(options.sinks.map((sink) => [sink.name, sink]));
    this.sleep = options.sleep ?? realSleep;
    this.pageReads = new TurnBatch((lanes) => options.outbox.pendingOfLanes(lanes));
    this.acknowledgements = new TurnBatch(
      async (acks) => {
        await options.outbox.ackLanes(acks);
        return acks.map(() => undefined);
      },
      options.outbox.acknowledgesPerTurn() ? 'next-turn' : 'end-of-task',
    );
  }

  /** A sink a feature module adds (e.g. Chatwoot) before lanes resume; it joins the same road. */
  addSink(sink: DurableSink): void {
    this.sinks.set(sink.name, sink);
  }

  sink(name: string): DurableSink | undefined {
    return this.sinks.get(name);
  }

  sinkNames(): string[] {
    return [...this.sinks.keys()];
  }

  /** Resumes every lane that has pending deliveries (call once at start). */
  async resume(): Promise<void> {
    for (const { sink, instanceId } of await this.options.outbox.lanes()) this.notify(sink, instanceId);
  }

  /** New events are stored for this lane. */
  notify(sink: string, instanceId: string): void {
    if (this.stopped || !this.sinks.has(sink) || !this.owned(instanceId)) return;
    const key = `${sink}\u0000${instanceId}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { running: false, dirty: false, acked: [], arrivals: 0 };
      this.lanes.set(key, lane);
    }
    lane.dirty = true;
    if (lane.running) {
      lane.arrivals += 1;
      lane.onArrival?.();
      lane.wake?.();
      return;
    }
    lane.running = true;
    lane.finished = this.run(key, lane, sink, instanceId);
  }

  /** Cluster mode: lanes run only for the instances this process owns (src/cluster/). */
  runOnlyFor(owned: (instanceId: string) => boolean): void {
    this.owned = owned;
  }

  /** Starts the lanes with pending deliveries of one instance (this process just took it over). */
  async resumeInstance(instanceId: string): Promise<void> {
    for (const sink of await this.options.outbox.lanesOf(instanceId)) this.notify(sink, instanceId);
  }

  /**
   * Stops the instance's lanes (it moves to another process): a delivery under way finishes and is
   * acknowledged, the rest stays pending for the next owner. Resolves once they have stopped.
   */
  async releaseInstance(instanceId: string): Promise<void> {
    const suffix = `\u0000${instanceId}`;
    const lanes = [...this.lanes].filter(([key]) => key.endsWith(suffix)).map(([, lane]) => lane);
    for (const lane of lanes) {
      lane.halted = true;
      lane.wake?.();
      lane.onArrival?.();
    }
    await Promise.all(lanes.map((lane) => lane.finished ?? Promise.resolve()));
  }

  /** Resolves when no lane is running (tests and graceful shutdown). */
  whenIdle(): Promise<void> {
    if ([...this.lanes.values()].every((lane) => !lane.running)) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  /**
   * Stops taking new work, lets the deliveries under way finish and be acknowledged (at most
   * `graceMs`), then closes the sinks. The gateway calls this before it gives up its lease, so a
   * standby taking over does not deliver again what this process was still delivering.
   */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) {
      lane.wake?.();
      lane.onArrival?.();
    }
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([
      this.whenIdle().then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (gaveUp)
      this.options.log.warn(
        { lanes: [...this.lanes.keys()].length, graceMs },
        'stopping with deliveries still under way; they will be repeated',
      );
    for (const sink of this.sinks.values()) await sink.close?.();
  }

  private async run(key: string, lane: Lane, sinkName: string, instanceId: string): Promise<void> {
    const sink = this.sinks.get(sinkName)!;
    try {
      while (!this.off(lane) && lane.dirty) {
        lane.dirty = false;
        if (sink.batching && sink.deliverBatch) {
          const instance = await this.options.instances.find(instanceId);
          if (instance && sink.batching(instance)) {
            await this.runBatches(sink, lane, instanceId);
            continue;
          }
        }
        let page: PendingDelivery[];
        do {
          page = await this.pageReads.request({ sink: sinkName, instanceId, limit: PAGE });
          const from = sink.deliverRun ? await this.deliverFreshRun(sink, lane, instanceId, page) : 0;
          for (const pending of page.slice(from)) {
            if (this.off(lane)) return;
            await this.deliverWithRetry(sink, lane, pending);
          }
          // A crash before this line re-delivers the batch after restart: at-least-once, never lost.
          await this.flushAcks(sink, lane);
        } while (page.length === PAGE && !this.off(lane));
      }
    } catch (error) {
      // Storage trouble: log and let the next notification (or restart) pick the lane up again.
      this.options.log.error({ err: error, sink: sinkName, instanceId }, 'outbox lane failed');
    } finally {
      await this.flushAcks(sink, lane).catch((error: unknown) =>
        this.options.log.error({ err: error }, 'could not acknowledge deliveries'),
      );
      lane.running = false;
      lane.wake = undefined;
      this.lanes.delete(key);
      if ([...this.lanes.values()].every((l) => !l.running)) {
        for (const resolve of this.idle) resolve();
        this.idle.clear();
      }
    }
  }

  /**
   * A batched lane: reads up to `maxEvents` pending events, waits (at most until the oldest is
   * `maxWaitMs` old) for the batch to fill, delivers them as one unit, until nothing is pending.
   * Order is kept: a batch is retried whole before the next one goes.
   */
  private async runBatches(sink: DurableSink, lane: Lane, instanceId: string): Promise<void> {
    while (!this.off(lane)) {
      const instance = await this.options.instances.find(instanceId);
      const batching = instance ? sink.batching!(instance) : undefined;
      if (!batching) {
        // Batching was turned off (or the instance is gone): the one-at-a-time loop takes over.
        lane.dirty = true;
        return;
      }
      let page = await this.pageReads.request({ sink: sink.name, instanceId, limit: batching.maxEvents });
      if (page.length === 0) return;
      const oldest = page[0]!;
      if (page.length < batching.maxEvents && oldest.attempts === 0) {
        const waitMs = oldest.entry.createdAt + batching.maxWaitMs - this.options.clock.now();
        if (waitMs > 0) {
          await this.gather(lane, waitMs, batching.maxEvents - page.length);
          if (this.off(lane)) return;
          page = await this.pageReads.request({ sink: sink.name, instanceId, limit: batching.maxEvents });
        }
      }
      await this.deliverBatchWithRetry(sink, lane, instanceId, page);
      await this.flushAcks(sink, lane);
    }
  }

  /** Waits up to `ms` for `missing` more events to be notified (or for stop). */
  private async gather(lane: Lane, ms: number, missing: number): Promise<void> {
    lane.arrivals = 0;
    await Promise.race([
      this.sleep(ms),
      new Promise<void>((resolve) => {
        lane.onArrival = () => {
          if (this.off(lane) || lane.arrivals >= missing) resolve();
        };
      }),
    ]);
    lane.onArrival = undefined;
  }

  private async deliverBatchWithRetry(sink: DurableSink, lane: Lane, instanceId: string, page: PendingDelivery[]): Promise<void> {
    const entries = page.map((pending) => pending.entry);
    const seqs = entries.map((entry) => entry.seq);
    let attempts = Math.max(...page.map((pending) => pending.attempts));
    let wait = Math.max(...page.map((pending) => pending.nextAttemptAt)) - this.options.clock.now();
    while (!this.off(lane)) {
      if (wait > 0) await this.pause(lane, wait);
      if (this.off(lane)) return;
      const instance = await this.options.instances.find(instanceId);
      if (!instance || !sink.wants(instance)) {
        lane.acked.push(...seqs);
        return;
      }
      attempts += 1;
      const started = performance.now();
      try {
        await sink.deliverBatch!(entries, instance);
        this.observe(sink, entries.length, 'delivered', started);
        lane.acked.push(...seqs);
        return;
      } catch (error) {
        this.observe(sink, entries.length, 'failed', started);
        const status = error instanceof DeliveryError ? error.status : null;
        const message = error instanceof Error ? error.message : String(error);
        const now = this.options.clock.now();
        if (sink.retry.maxAttempts !== null && attempts >= sink.retry.maxAttempts) {
          // Each event of the batch becomes its own dead letter (resent one by one).
          for (const pending of page) await this.bury(sink, pending.entry, attempts, status, message, pending.firstAttemptAt, now);
          return;
        }
        await this.flushAcks(sink, lane);
        wait = backoffDelay({ baseMs: sink.retry.baseDelayMs, maxMs: sink.retry.maxDelayMs }, attempts - 1, this.options.random);
        for (const seq of seqs) await this.options.outbox.recordFailure(seq, sink.name, attempts, now + wait, message, status);
        this.options.log.warn(
          { sink: sink.name, instanceId, events: entries.length, firstEventId: entries[0]?.eventId, attempts, status, error: message },
          'batch delivery failed; will retry',
        );
      }
    }
  }

  private async deliverWithRetry(sink: DurableSink, lane: Lane, pending: PendingDelivery): Promise<void> {
    const { entry } = pending;
    let attempts = pending.attempts;
    let wait = pending.nextAttemptAt - this.options.clock.now();
    while (!this.off(lane)) {
      if (wait > 0) await this.pause(lane, wait);
      if (this.off(lane)) return;
      const instance = await this.options.instances.find(entry.instanceId);
      if (!instance || !sink.wants(instance)) {
        // The instance is gone or no longer wants this sink (e.g. webhook URL removed): nothing to deliver.
        lane.acked.push(entry.seq);
        return;
      }
      attempts += 1;
      const started = performance.now();
      try {
        await sink.deliver(entry, instance);
        this.observe(sink, 1, 'delivered', started);
        lane.acked.push(entry.seq);
        return;
      } catch (error) {
        this.observe(sink, 1, 'failed', started);
        const next = await this.failed(sink, lane, pending, attempts, error);
        if (next === undefined) return;
        wait = next - this.options.clock.now();
      }
    }
  }

  /**
   * After a failed attempt: a dead letter when it was the sink's last (undefined), else the failure
   * is recorded and the time of the next attempt returned.
   */
  private async failed(
    sink: DurableSink,
    lane: Lane,
    pending: PendingDelivery,
    attempts: number,
    error: unknown,
  ): Promise<number | undefined> {
    const { entry } = pending;
    const status = error instanceof DeliveryError ? error.status : null;
    const message = error instanceof Error ? error.message : String(error);
    const now = this.options.clock.now();
    if (sink.retry.maxAttempts !== null && attempts >= sink.retry.maxAttempts) {
      await this.bury(sink, entry, attempts, status, message, pending.firstAttemptAt, now);
      return undefined;
    }
    // Settle what was delivered before waiting, so a crash during a long backoff repeats nothing.
    await this.flushAcks(sink, lane);
    const wait = backoffDelay({ baseMs: sink.retry.baseDelayMs, maxMs: sink.retry.maxDelayMs }, attempts - 1, this.options.random);
    await this.options.outbox.recordFailure(entry.seq, sink.name, attempts, now + wait, message, status);
    this.options.log.warn(
      { sink: sink.name, instanceId: entry.instanceId, eventId: entry.eventId, attempts, status, error: message },
      'delivery failed; will retry',
    );
    return now + wait;
  }

  /**
   * A sink that delivers runs (the webhook's delivery thread) takes the page's leading events that
   * were never attempted in one go, one POST each, in order. Returns where the one-at-a-time loop
   * goes on: after the run, or at its failed event (its first attempt recorded, like any other).
   */
  private async deliverFreshRun(sink: DurableSink, lane: Lane, instanceId: string, page: PendingDelivery[]): Promise<number> {
    let fresh = 0;
    while (fresh < page.length && page[fresh]!.attempts === 0) fresh += 1;
    if (fresh === 0 || this.off(lane)) return 0;
    const instance = await this.options.instances.find(instanceId);
    if (!instance || !sink.wants(instance)) return 0;
    let result;
    try {
      result = await sink.deliverRun!(
        page.slice(0, fresh).map((pending) => pending.entry),
        instance,
      );
    } catch (error) {
      // Nothing of the run counts as delivered: the one-at-a-time loop delivers it (at least once).
      this.options.log.warn({ err: error, sink: sink.name, instanceId }, 'delivery run failed; delivering one at a time');
      return 0;
    }
    result.seconds.forEach((seconds, i) =>
      this.options.observer?.attempted(sink.name, 1, i < result.delivered ? 'delivered' : 'failed', seconds),
    );
    for (const pending of page.slice(0, result.delivered)) lane.acked.push(pending.entry.seq);
    if (!result.failure) return fresh;
    const at = result.delivered;
    const next = await this.failed(sink, lane, page[at]!, 1, result.failure);
    if (next === undefined) return at + 1;
    page[at] = { ...page[at]!, attempts: 1, nextAttemptAt: next };
    return at;
  }

  private observe(sink: DurableSink, events: number, outcome: 'delivered' | 'failed', started: number): void {
    this.options.observer?.attempted(sink.name, events, outcome, (performance.now() - started) / 1000);
  }

  private async bury(
    sink: DurableSink,
    entry: OutboxEntry,
    attempts: number,
    status: number | null,
    error: string,
    firstAttemptAt: number,
    now: number,
  ) {
    await this.options.deadLetters.bury(
      {
        id: (this.options.ids ?? systemIds).id(),
        instanceId: entry.instanceId,
        sink: sink.name,
        eventId: entry.eventId,
        event: entry.type,
        body: entry.body,
        attempts,
        lastStatus: status,
        lastError: error,
        firstAttemptAt,
        lastAttemptAt: now,
        createdAt: now,
      },
      entry.seq,
    );
    this.options.observer?.deadLettered(sink.name, 1);
    this.options.log.warn(
      { sink: sink.name, instanceId: entry.instanceId, eventId: entry.eventId, attempts },
      'delivery gave up; stored as dead letter',
    );
  }

  private async flushAcks(sink: DurableSink, lane: Lane): Promise<void> {
    if (lane.acked.length === 0) return;
    const seqs = lane.acked;
    lane.acked = [];
    await this.acknowledgements.request({ sink: sink.name, seqs });
  }

  /** The lane must stop: the dispatcher stops, or its instance moves to another process. */
  private off(lane: Lane): boolean {
    return this.stopped || lane.halted === true;
  }

  /** Sleeps for a retry delay; stop() cuts it short. */
  private async pause(lane: Lane, ms: number): Promise<void> {
    await Promise.race([
      this.sleep(ms),
      new Promise<void>((resolve) => {
        lane.wake = () => {
          if (this.off(lane)) resolve();
        };
      }),
    ]);
    lane.wake = undefined;
  }
}
