/**
 * Backfill: re-delivers an instance's stored events (live outbox and event archive) to its webhook or
 * to one delivery channel, in their original order, paced, each envelope unchanged but for
 * `redelivered: true` (same `eventId`). A job's range is fixed when it is created; its cursor is saved
 * after every event, so a restart resumes where it stopped (at most the event in flight at a crash is
 * sent twice). Delivery failures are retried with the channel's backoff; after its last attempt the
 * job fails (its cursor tells where a new job can start).
 */
import { isoTimeOrNull as iso, newId, type Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { OutboxDispatcher } from '../../events/dispatcher.js';
import type { HistoryRange, OutboxStore, StoredEvent } from '../../events/outbox.js';
import type { DurableSink } from '../../events/sink.js';
import { backoffDelay } from '../../retry.js';
import type { InstanceService } from '../../instance-registry/service.js';
import type { EventType } from '../../network/port.js';
import type { BackfillJobRow, BackfillRepo } from './repo.js';

const PAGE = 100;
/** An ISO 8601 date-time (an eventId is a UUID and never looks like one). */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

export interface BackfillInput {
  instanceId: string;
  since: string;
  until?: string | undefined;
  events?: EventType[] | undefined;
  target: string;
  ratePerSecond?: number | undefined;
}

export function jobView(job: BackfillJobRow) {
  return {
    jobId: job.id,
    instanceId: job.instance_id,
    target: job.target,
    since: job.since_text,
    until: job.until_text,
    events: job.event_types === null ? null : (JSON.parse(job.event_types) as string[]),
    ratePerSecond: job.rate_per_second,
    status: job.status as 'queued' | 'running' | 'completed' | 'cancelled' | 'failed',
    total: job.total,
    delivered: job.delivered,
    lastEventId: job.last_event_id,
    error: job.error,
    createdAt: new Date(job.created_at).toISOString(),
    updatedAt: new Date(job.updated_at).toISOString(),
    finishedAt: iso(job.finished_at),
  };
}

interface Running {
  cancelled: boolean;
  wake?: () => void;
  done: Promise<void>;
}

export class BackfillService {
  private readonly running = new Map<string, Running>();
  private started = false;
  private stopped = false;

  constructor(
    private readonly deps: {
      repo: BackfillRepo;
      outbox: OutboxStore;
      dispatcher: OutboxDispatcher;
      instances: InstanceService;
      clock: Clock;
      defaultRate: number;
      log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
    },
  ) {}

  async create(input: BackfillInput) {
    const { outbox, clock } = this.deps;
    const instance = await this.deps.instances.get(input.instanceId);
    const sink = this.deps.dispatcher.sink(input.target);
    if (!sink) throw errors.backfillRefused(`unknown target ${input.target}; configured: ${this.deps.dispatcher.sinkNames().join(', ')}`);
    if (!sink.wants(instance))
      throw errors.backfillRefused(
        `instance ${instance.id} has no ${input.target === 'webhook' ? 'webhookUrl' : `${input.target} delivery`}`,
      );
    const bound = async (value: string, name: string) => {
      if (ISO_TIME.test(value)) {
        const at = Date.parse(value);
        if (Number.isNaN(at)) throw errors.badRequest(`${name} is not a valid time`);
        return { at, seq: undefined };
      }
      const found = await outbox.seqOf(value);
      if (!found || found.instanceId !== instance.id)
        throw errors.backfillRefused(`${name}: event ${value} of this instance is not in the outbox or the event archive`);
      return { at: undefined, seq: found.seq };
    };
    const since = await bound(input.since, 'since');
    const until = input.until === undefined ? undefined : await bound(input.until, 'until');
    // Events stored after this moment are not part of the job: its range is fixed now.
    const range: HistoryRange = {
      fromSeq: since.seq ?? 0,
      toSeq: until?.seq ?? (await outbox.lastSeq()),
      sinceAt: since.at ?? null,
      untilAt: until?.at ?? null,
      types: input.events && input.events.length > 0 ? input.events : null,
    };
    const now = clock.now();
    const job: BackfillJobRow = {
      id: newId(),
      instance_id: instance.id,
      target: input.target,
      since_text: input.since,
      until_text: input.until ?? null,
      from_seq: range.fromSeq,
      to_seq: range.toSeq,
      since_at: range.sinceAt,
      until_at: range.untilAt,
      event_types: range.types ? JSON.stringify(range.types) : null,
      rate_per_second: input.ratePerSecond ?? this.deps.defaultRate,
      status: 'queued',
      cursor_seq: 0,
      total: await outbox.historyCount(instance.id, range),
      delivered: 0,
      last_event_id: null,
      error: null,
      created_at: now,
      updated_at: now,
      finished_at: null,
    };
    await this.deps.repo.insert(job);
    if (this.started && !this.stopped) this.launch(job);
    return jobView(job);
  }

  async get(id: string) {
    const job = await this.deps.repo.get(id);
    if (!job) throw errors.notFound('backfill job');
    return jobView(job);
  }

  async list(filter: { instanceId?: string | undefined; status?: string | undefined }, offset: number, limit: number) {
    const { items, total } = await this.deps.repo.list(filter, offset, limit);
    return { items: items.map(jobView), total, offset, limit };
  }

  async cancel(id: string) {
    const job = await this.deps.repo.get(id);
    if (!job) throw errors.notFound('backfill job');
    if (!(await this.deps.repo.cancel(id, this.deps.clock.now()))) throw errors.conflict(`backfill job is already ${job.status}`);
    const run = this.running.get(id);
    if (run) {
      run.cancelled = true;
      run.wake?.();
      await run.done;
    }
    return this.get(id);
  }

  /** Resumes unfinished jobs (the active process only). */
  async start(): Promise<void> {
    this.started = true;
    for (const job of await this.deps.repo.unfinished()) this.launch(job);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const run of this.running.values()) run.wake?.();
    await Promise.all([...this.running.values()].map((run) => run.done));
  }

  /** Cluster mode: this process no longer leads; its jobs halt between two events (the new leader resumes them). */
  async standDown(): Promise<void> {
    this.started = false;
    await this.stop();
    this.stopped = false;
  }

  private launch(job: BackfillJobRow): void {
    if (this.running.has(job.id)) return;
    const run: Running = { cancelled: false, done: Promise.resolve() };
    run.done = this.run(job, run)
      .catch(async (error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        this.deps.log.warn({ err: error, jobId: job.id }, 'backfill job failed');
        await this.deps.repo.setStatus(job.id, 'failed', this.deps.clock.now(), message).catch(() => undefined);
      })
      .finally(() => this.running.delete(job.id));
    this.running.set(job.id, run);
  }

  private halted(run: Running): boolean {
    return run.cancelled || this.stopped;
  }

  private async run(job: BackfillJobRow, run: Running): Promise<void> {
    const { repo, outbox, clock } = this.deps;
    const sink = this.deps.dispatcher.sink(job.target);
    if (!sink) throw new Error(`target ${job.target} is no longer configured`);
    await repo.setStatus(job.id, 'running', clock.now());
    const range: HistoryRange = {
      fromSeq: job.from_seq,
      toSeq: job.to_seq,
      sinceAt: job.since_at,
      untilAt: job.until_at,
      types: job.event_types === null ? null : (JSON.parse(job.event_types) as string[]),
    };
    const gapMs = 1000 / job.rate_per_second;
    let cursor = job.cursor_seq;
    let delivered = job.delivered;
    for (;;) {
      const page = await outbox.history(job.instance_id, cursor, range, PAGE);
      if (page.length === 0) break;
      for (const event of page) {
        if (this.halted(run)) return;
        const started = clock.now();
        if (!(await this.deliver(sink, event, run))) return;
        cursor = event.seq;
        delivered += 1;
        await repo.progress(job.id, cursor, delivered, event.eventId, clock.now());
        await this.pause(run, gapMs - (clock.now() - started));
      }
    }
    if (!this.halted(run)) await repo.setStatus(job.id, 'completed', clock.now());
  }

  /** Delivers one event with the sink's retries; false when the job was halted meanwhile. */
  private async deliver(sink: DurableSink, event: StoredEvent, run: Running): Promise<boolean> {
    const envelope = JSON.parse(event.body) as Record<string, unknown>;
    const body = JSON.stringify({ ...envelope, redelivered: true });
    for (let attempt = 1; ; attempt += 1) {
      const instance = await this.deps.instances.get(event.instanceId);
      if (!sink.wants(instance))
        throw new Error(`instance no longer has ${sink.name === 'webhook' ? 'a webhookUrl' : `${sink.name} delivery`}`);
      try {
        await sink.deliver({ ...event, instanceName: instance.name, body }, instance);
        return true;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (sink.retry.maxAttempts !== null && attempt >= sink.retry.maxAttempts) throw new Error(`event ${event.eventId}: ${message}`);
        await this.pause(run, backoffDelay({ baseMs: sink.retry.baseDelayMs, maxMs: sink.retry.maxDelayMs }, attempt - 1));
        if (this.halted(run)) return false;
      }
    }
  }

  /** Waits, cut short by cancel or stop. */
  private async pause(run: Running, ms: number): Promise<void> {
    if (ms <= 0 || this.halted(run)) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        run.wake = undefined;
        resolve();
      }
      run.wake = done;
    });
  }
}
