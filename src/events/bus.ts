/**
 * The one event road: driver -> bus -> (filter) -> outbox -> sinks. The bus applies the instance's
 * filter, builds the envelope, stores it with one pending row per durable sink that wants it (events
 * published in the same tick share one transaction), and only then hands it to the sinks.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, RawBuilder } from 'kysely';
import { isoTime, systemIds, type Clock, type IdSource } from '../clock.js';
import { filterAccepts, type Instance, type InstanceService } from '../instance-registry/service.js';
import { isDatabaseUnavailable } from '../storage/db.js';
import { StaleOwnerError } from '../storage/fence.js';
import type { CanonicalEvent } from '../network/port.js';
import type { OutboxDispatcher } from './dispatcher.js';
import type { EventEnvelope, OutboxEntry } from './envelope.js';
import type { NewOutboxEvent, OutboxStore } from './outbox.js';
import type { DurableSink, LiveSink } from './sink.js';
import type { Database } from '../storage/schema.js';

/** Rows of another store that commit in the outbox's transaction (one commit per tick). */
export interface CommitParticipant {
  writeIn(trx: Kysely<Database>): Promise<Outcome | undefined>;
  /**
   * PostgreSQL: the same rows as one data-modifying statement that the outbox runs inside its own
   * (OutboxStore.appendInOneStatement); undefined when there are none.
   */
  asStatement(): ({ statement: RawBuilder<unknown> } & Outcome) | undefined;
}

/** What a participant is told once the write it joined is over. */
interface Outcome {
  committed(): void;
  failed(): void;
}

export interface EventBusOptions {
  ids?: IdSource;
  /**
   * Ticks start at least this far apart (ms; EVENT_COMMIT_SPACING_MS, default 2). A commit costs much
   * the same for 4 events as for 40 (SQLite writes the last pages of every B-tree the tick touched;
   * PostgreSQL waits a round trip and a flush to disk): storing on every turn of the event loop, a
   * gateway at half its saturating send rate committed ~4 sends a time and spent 1.7 times the CPU per
   * send of a saturated one, so "half load" kept it nearly busy. A busy gateway's ticks last longer
   * than this anyway, and an idle one's first event is stored on the next turn: the wait only
   * gathers events that come close together. 0: a tick on every turn.
   */
  commitSpacingMs?: number;
}

interface Waiting {
  event: NewOutboxEvent;
  resolve: (entry: OutboxEntry | undefined) => void;
  reject: (error: unknown) => void;
}

export class EventBus {
  private batch: Waiting[] = [];
  private flushing: Promise<void> | undefined;
  /** When the last tick started (performance.now()). */
  private lastTickAt = -Infinity;
  private readonly ids: IdSource;
  private readonly commitSpacingMs: number;
  private readonly live: LiveSink[] = [];
  private readonly listeners: ((entry: OutboxEntry) => void)[] = [];
  private readonly participants: CommitParticipant[] = [];

  constructor(
    private readonly outbox: OutboxStore,
    private readonly dispatcher: OutboxDispatcher,
    private readonly durable: DurableSink[],
    private readonly instances: InstanceService,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    options: EventBusOptions = {},
  ) {
    this.ids = options.ids ?? systemIds;
    this.commitSpacingMs = options.commitSpacingMs ?? 0;
  }

  /** A durable sink added by a feature module: it gets pending rows for events stored from now on. */
  addDurableSink(sink: DurableSink): void {
    this.durable.push(sink);
    this.dispatcher.addSink(sink);
  }

  addLiveSink(sink: LiveSink): void {
    this.live.push(sink);
  }

  /** Writes that join each flush's transaction (the message store). */
  addCommitParticipant(participant: CommitParticipant): void {
    this.participants.push(participant);
  }

  /** In-process observers of stored events (tests, metrics). */
  onStored(listener: (entry: OutboxEntry) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Records an event of an instance. Resolves once it is durably stored (undefined when the
   * instance's filter drops it or the instance no longer exists).
   */
  async publish(instanceId: string, event: CanonicalEvent): Promise<OutboxEntry | undefined> {
    return (await this.enqueue(instanceId, event)).stored;
  }

  /**
   * Puts the event in the next batch (its place in the order is then fixed) and gives back `stored`,
   * resolving once it is durable: at once when the instance is in the cache, else a promise of it
   * once the instance is read. Callers that keep an order between events wait for the queueing only,
   * so events of many requests share one transaction.
   */
  enqueue(
    instanceId: string,
    event: CanonicalEvent,
  ): { stored: Promise<OutboxEntry | undefined> } | Promise<{ stored: Promise<OutboxEntry | undefined> }> {
    const cached = this.instances.cached(instanceId);
    if (cached) return { stored: this.publishFor(cached, event) };
    return this.instances.find(instanceId).then((instance) => ({
      stored: instance ? this.publishFor(instance, event) : Promise.resolve(undefined),
    }));
  }

  publishFor(instance: Instance, event: CanonicalEvent): Promise<OutboxEntry | undefined> {
    if (!filterAccepts(instance.webhookEvents, event.type)) return Promise.resolve(undefined);
    const createdAt = this.clock.now();
    // `seq` is added by the outbox when it stores the event (the numbering is durable there).
    const envelope: Omit<EventEnvelope, 'seq'> = {
      event: event.type,
      instanceId: instance.id,
      instanceName: instance.name,
      data: event.data,
      eventId: this.ids.id(),
      timestamp: isoTime(createdAt),
    };
    const stored: NewOutboxEvent = {
      eventId: envelope.eventId,
      instanceId: instance.id,
      instanceName: instance.name,
      type: event.type,
      body: JSON.stringify(envelope),
      createdAt,
      sinks: this.durable.filter((sink) => sink.wants(instance)).map((sink) => sink.name),
    };
    return new Promise((resolve, reject) => {
      this.batch.push({ event: stored, resolve, reject });
      if (!this.flushing) this.scheduleTick();
    });
  }

  private scheduleTick(): void {
    this.flushing = new Promise<void>((done) => {
      const tick = () => void this.flush().finally(done);
      const wait = this.lastTickAt + this.commitSpacingMs - performance.now();
      if (wait > 0) setTimeout(tick, wait);
      else setImmediate(tick);
    });
  }

  /**
   * The tick gathering or storing events, if any (a flush is scheduled or under way): resolves once
   * it is over, and never rejects.
   */
  currentTick(): Promise<void> | undefined {
    return this.flushing;
  }

  /** Resolves once every event published so far is stored. */
  async settled(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /**
   * Stores the events with the participants' rows, in one statement on PostgreSQL, else in one
   * transaction. A failed statement (a message row whose instance was just deleted) sends the tick
   * again as the transaction, where each participant guards its own rows; a refusal of the fence
   * or a database out of reach does not (the latter may even have committed before the connection
   * dropped: the same events again would fail on their ids). `joined` gets the outcome of every
   * participant whose rows are in the write that succeeded.
   */
  private async store(events: NewOutboxEvent[], joined: Outcome[]): Promise<OutboxEntry[]> {
    if (this.outbox.storesInOneStatement()) {
      const alongside = this.participants.map((participant) => participant.asStatement()).filter((taken) => taken !== undefined);
      try {
        const entries = await this.outbox.appendInOneStatement(
          events,
          alongside.map((taken) => taken.statement),
        );
        joined.push(...alongside);
        return entries;
      } catch (error) {
        for (const taken of alongside) taken.failed();
        // A stale owner's tick is refused whatever it carries (flush sends the rest again).
        if (alongside.length === 0 || error instanceof StaleOwnerError || isDatabaseUnavailable(error)) throw error;
      }
    }
    return this.outbox.append(
      events,
      this.participants.length === 0
        ? undefined
        : async (trx) => {
            for (const participant of this.participants) {
              const outcome = await participant.writeIn(trx);
              if (outcome) joined.push(outcome);
            }
          },
    );
  }

  private async flush(): Promise<void> {
    this.lastTickAt = performance.now();
    const batch = this.batch;
    this.batch = [];
    const joined: Outcome[] = [];
    try {
      const entries = await this.store(
        batch.map((w) => w.event),
        joined,
      );
      for (const outcome of joined) outcome.committed();
      entries.forEach((entry, i) => {
        const waiting = batch[i]!;
        for (const sink of waiting.event.sinks) this.dispatcher.notify(sink, entry.instanceId);
        for (const sink of this.live) {
          try {
            sink.push(entry);
          } catch (error) {
            this.log.warn({ err: error, sink: sink.name }, 'live sink failed');
          }
        }
        for (const listener of this.listeners) listener(entry);
        waiting.resolve(entry);
      });
    } catch (error) {
      for (const outcome of joined) outcome.failed();
      if (error instanceof StaleOwnerError) {
        // Cluster mode: another process owns these instances now; their events are its to store.
        // The rest of the tick goes again, first and in order.
        const stale = new Set(error.instanceIds);
        this.log.warn({ instances: error.instanceIds }, 'refused events of instances this process no longer owns');
        const again = batch.filter((waiting) => !stale.has(waiting.event.instanceId));
        for (const waiting of batch) if (stale.has(waiting.event.instanceId)) waiting.reject(error);
        this.batch = [...again, ...this.batch];
      } else {
        this.log.error({ err: error }, 'could not store events');
        for (const waiting of batch) waiting.reject(error);
      }
    } finally {
      this.flushing = undefined;
      if (this.batch.length > 0) this.scheduleTick();
    }
  }
}
