/**
 * /send/batch/text: a batch is stored with its items, then sent in the background, one item at a
 * time with a pause between sends so a large batch does not flood the network (a burst of sends
 * is what gets numbers banned). Each instance sends its batches one after another. Progress is read
 * from the store; a restart resumes where it stopped. An item caught mid-send by a crash is marked
 * failed rather than sent again (a duplicate is worse than a gap the caller can see and resend).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Static } from 'typebox';
import { isoTimeOrNull as iso, systemIds, type Clock, type IdSource } from '../clock.js';
import { AppError, errors } from '../errors.js';
import type { Instance, InstanceService } from '../instance-registry/service.js';
import type { BatchRepo } from './batch-repo.js';
import type * as S from '../outgoing/schema.js';
import type { MessagingService } from '../outgoing/service.js';

type ItemPayload = { text: string; mentions?: string[]; linkPreview?: boolean };

export interface BatchPacing {
  /** Default pause between two sends, ms. */
  intervalMs: number;
  /** Smallest pause a caller may ask for, ms. */
  minIntervalMs: number;
}

const INTERRUPTED = 'the gateway stopped while this item was being sent; not resent to avoid a duplicate';

export class BatchService {
  /** instanceId -> its running send loop. */
  private readonly loops = new Map<string, Promise<void>>();
  private stopped = false;
  private wake: () => void = () => undefined;
  private readonly stopSignal: Promise<void>;
  /** Cluster mode: loops run only for the instances this process holds (src/cluster/). */
  private held: (instanceId: string) => boolean = () => true;
  /** Instances moving to another process: their loops stop at the next safe point. */
  private readonly halting = new Set<string>();
  /** Wakes a loop pausing between two items (halt). */
  private readonly naps = new Map<string, () => void>();

  constructor(
    private readonly repo: BatchRepo,
    private readonly messaging: MessagingService,
    private readonly instances: InstanceService,
    private readonly pacing: BatchPacing,
    private readonly clock: Clock,
    private readonly sleep: (ms: number) => Promise<void>,
    private readonly log: FastifyBaseLogger,
    private readonly ids: IdSource = systemIds,
  ) {
    this.stopSignal = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  async create(instance: Instance, body: Static<typeof S.SendBatchBody>): Promise<Static<typeof S.BatchAccepted>> {
    const intervalMs = body.intervalMs ?? this.pacing.intervalMs;
    if (intervalMs < this.pacing.minIntervalMs) {
      throw errors.badRequest(`intervalMs must be at least ${this.pacing.minIntervalMs} (BATCH_MIN_INTERVAL_MS)`);
    }
    // Refused up front, so a batch is not accepted only to fail item by item.
    await this.messaging.connected(instance);
    const id = this.ids.id();
    const createdAt = this.clock.now();
    await this.repo.insert({
      id,
      instanceId: instance.id,
      intervalMs,
      createdAt,
      items: body.messages.map((item) => {
        const payload: ItemPayload = {
          text: item.text,
          ...(item.mentions ? { mentions: item.mentions } : {}),
          ...(item.linkPreview !== undefined ? { linkPreview: item.linkPreview } : {}),
        };
        return { number: item.number, payload: JSON.stringify(payload) };
      }),
    });
    this.kick(instance.id);
    return { batchId: id, status: 'queued', total: body.messages.length, intervalMs, createdAt: iso(createdAt)! };
  }

  async progress(instance: Instance, batchId: string): Promise<Static<typeof S.BatchProgress>> {
    const batch = await this.repo.find(instance.id, batchId);
    if (!batch) throw errors.batchNotFound(batchId);
    const items = await this.repo.items(batchId);
    const count = (status: string) => items.filter((item) => item.status === status).length;
    return {
      batchId: batch.id,
      status: batch.status as Static<typeof S.BatchProgress>['status'],
      total: Number(batch.total),
      sent: count('sent'),
      failed: count('failed'),
      pending: count('pending') + count('sending'),
      cancelled: count('cancelled'),
      intervalMs: Number(batch.interval_ms),
      createdAt: iso(Number(batch.created_at))!,
      startedAt: iso(batch.started_at === null ? null : Number(batch.started_at)),
      finishedAt: iso(batch.finished_at === null ? null : Number(batch.finished_at)),
      items: items.map((item) => ({
        index: Number(item.position),
        number: item.number,
        status: item.status as Static<typeof S.BatchProgress>['items'][number]['status'],
        messageId: item.message_id,
        error: item.error,
        sentAt: iso(item.sent_at === null ? null : Number(item.sent_at)),
      })),
    };
  }

  /** Items not sent yet are cancelled; the one being sent (if any) still completes. */
  async cancel(instance: Instance, batchId: string): Promise<Static<typeof S.BatchProgress>> {
    const current = await this.progress(instance, batchId);
    if (current.status === 'completed' || current.status === 'cancelled') {
      throw errors.conflict(`batch ${batchId} is already ${current.status}`);
    }
    await this.repo.cancel(batchId, this.clock.now());
    return this.progress(instance, batchId);
  }

  /** At start: items caught mid-send by a stop are failed; unfinished batches carry on. */
  async resume(): Promise<void> {
    const open = (await this.repo.open()).filter((batch) => this.held(batch.instance_id));
    if (open.length === 0) return;
    await this.repo.failInterrupted(
      open.map((b) => b.id),
      INTERRUPTED,
    );
    for (const instanceId of new Set(open.map((b) => b.instance_id))) this.kick(instanceId);
  }

  /** Cluster mode: batch loops run where `held` says (the instance's owner). */
  runWhere(held: (instanceId: string) => boolean): void {
    this.held = held;
  }

  /** The instance arrived in this process (cluster mode): its unfinished batches carry on here. */
  async resumeInstance(instanceId: string): Promise<void> {
    const open = (await this.repo.open()).filter((batch) => batch.instance_id === instanceId);
    if (open.length === 0) return;
    // An item a crashed owner was sending has an unknown outcome: failed, as after a restart.
    await this.repo.failInterrupted(
      open.map((b) => b.id),
      INTERRUPTED,
    );
    this.kick(instanceId);
  }

  /** The instance leaves this process: its loop finishes the item being sent and stops. */
  async halt(instanceId: string): Promise<void> {
    const loop = this.loops.get(instanceId);
    if (!loop) return;
    this.halting.add(instanceId);
    this.naps.get(instanceId)?.();
    await loop;
    this.halting.delete(instanceId);
  }

  /** Waits for the send loops to reach a safe point (the current item finished) and stops them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await Promise.all([...this.loops.values()]);
  }

  /** Starts the instance's send loop unless it is running. */
  private kick(instanceId: string): void {
    if (this.stopped || this.loops.has(instanceId) || this.halting.has(instanceId) || !this.held(instanceId)) return;
    const loop = this.run(instanceId)
      .catch((error: unknown) => this.log.error({ err: error, instanceId }, 'batch send loop failed'))
      .finally(() => {
        this.loops.delete(instanceId);
        // A batch created while the loop was finishing would otherwise wait for the next one.
        void this.pendingBatch(instanceId).then(
          (next) => next && this.kick(instanceId),
          () => undefined,
        );
      });
    this.loops.set(instanceId, loop);
  }

  private pendingBatch(instanceId: string) {
    return this.repo.nextOpen(instanceId);
  }

  private async run(instanceId: string): Promise<void> {
    for (;;) {
      if (this.off(instanceId)) return;
      const batch = await this.pendingBatch(instanceId);
      if (!batch) return;
      if (batch.status === 'queued') {
        await this.repo.markRunning(batch.id, this.clock.now());
      }
      const finished = await this.sendItems(instanceId, batch.id, Number(batch.interval_ms));
      if (!finished) return;
      await this.repo.markCompleted(batch.id, this.clock.now());
    }
  }

  /** Sends the batch's pending items in order, pausing between two; false when stopped before the end. */
  private async sendItems(instanceId: string, batchId: string, intervalMs: number): Promise<boolean> {
    for (;;) {
      const item = await this.nextItem(batchId);
      if (!item) return true;
      const instance = await this.instances.find(instanceId);
      if (!instance) return false;
      if (!(await this.repo.claimItem(batchId, Number(item.position)))) continue; // cancelled in the meantime
      const payload = JSON.parse(item.payload) as ItemPayload;
      try {
        const sent = await this.messaging.send(instance, {
          kind: 'text',
          to: item.number,
          text: payload.text,
          linkPreview: payload.linkPreview ?? true,
          ...(payload.mentions && payload.mentions.length > 0 ? { mentions: payload.mentions } : {}),
        });
        await this.finishItem(batchId, Number(item.position), { status: 'sent', message_id: sent.key.id, sent_at: this.clock.now() });
      } catch (error) {
        if (!(error instanceof AppError)) this.log.warn({ err: error, instanceId, batchId }, 'batch item failed');
        await this.finishItem(batchId, Number(item.position), {
          status: 'failed',
          error: error instanceof AppError ? error.message : 'the network failed the send',
        });
      }
      // The pause comes between two sends, never after the last; a cancel during it ends the batch.
      if (!(await this.nextItem(batchId))) return true;
      await Promise.race([this.sleep(intervalMs), this.stopSignal, new Promise<void>((resolve) => this.naps.set(instanceId, resolve))]);
      this.naps.delete(instanceId);
      if (this.off(instanceId)) return false;
    }
  }

  private off(instanceId: string): boolean {
    return this.stopped || this.halting.has(instanceId);
  }

  private nextItem(batchId: string) {
    return this.repo.nextPendingItem(batchId);
  }

  private finishItem(
    batchId: string,
    position: number,
    patch: { status: 'sent' | 'failed'; message_id?: string; sent_at?: number; error?: string },
  ): Promise<void> {
    return this.repo.finishItem(batchId, position, patch);
  }
}
