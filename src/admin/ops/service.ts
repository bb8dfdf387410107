/** The /admin overview and bulk operations, over the shared services (no tables of its own). */
import type { Clock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { DeadLetterFilter } from '../../events/dead-letters.js';
import type { OutboxStore } from '../../events/outbox.js';
import type { DeadLetterService } from '../../events/dead-letter-service.js';
import type { Instance, InstanceService } from '../../instance-registry/service.js';
import type { InstanceStatus, NetworkName } from '../../network/port.js';
import type { MessageStore } from '../../message-store/store.js';
import type { SessionRegistry } from '../../sessions/registry.js';

export interface BulkDeadLetterInput {
  instanceId?: string | undefined;
  channel?: string | undefined;
  event?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  ids?: string[] | undefined;
  all?: boolean | undefined;
}

export interface ReconnectManyInput {
  ids?: string[] | undefined;
  status?: InstanceStatus[] | undefined;
  network?: NetworkName | undefined;
  all?: boolean | undefined;
  mode?: 'reconnect' | 'restart' | undefined;
}

/** Instances reconnected at the same time: enough to be quick, few enough not to stampede the network. */
const RECONNECT_CONCURRENCY = 8;
const LIST_PAGE = 500;

export function deadLetterFilter(input: Omit<BulkDeadLetterInput, 'all'>): DeadLetterFilter {
  return {
    instanceId: input.instanceId,
    sink: input.channel,
    event: input.event,
    since: input.since === undefined ? undefined : Date.parse(input.since),
    until: input.until === undefined ? undefined : Date.parse(input.until),
    ids: input.ids,
  };
}

function hasFilter(input: object): boolean {
  return Object.entries(input).some(([key, value]) => key !== 'all' && key !== 'limit' && key !== 'mode' && value !== undefined);
}

export class AdminOpsService {
  constructor(
    private readonly deps: {
      clock: Clock;
      instances: InstanceService;
      sessions: SessionRegistry;
      outbox: OutboxStore;
      deadLetters: DeadLetterService;
      messages: MessageStore;
      channelHealth: () => Record<string, { up: boolean; detail?: string }>;
    },
  ) {}

  async stats() {
    const { instances, outbox, deadLetters, messages, clock } = this.deps;
    const [byStatus, byNetwork, sendsPerMinute, pendingByChannel, deadByChannel] = await Promise.all([
      instances.countByStatus(),
      instances.countByNetwork(),
      messages.countSentSince(clock.now() - 60_000),
      outbox.pendingBySink(),
      deadLetters.countBySink(),
    ]);
    const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
    return {
      instances: { total: sum(byStatus), byStatus, byNetwork },
      sendsPerMinute,
      pendingByChannel,
      deadLetters: { total: sum(deadByChannel), byChannel: deadByChannel },
      channels: this.deps.channelHealth(),
    };
  }

  async outbox(filter: { instanceId?: string | undefined; channel?: string | undefined }, offset: number, limit: number) {
    const { items, total } = await this.deps.outbox.backlog({ instanceId: filter.instanceId, sink: filter.channel }, offset, limit);
    return {
      items: items.map((lane) => ({
        channel: lane.sink,
        instanceId: lane.instanceId,
        pending: lane.pending,
        oldestCreatedAt: new Date(lane.oldestCreatedAt).toISOString(),
        maxAttempts: lane.maxAttempts,
      })),
      total,
      offset,
      limit,
    };
  }

  deadLetters(filter: Omit<BulkDeadLetterInput, 'all' | 'ids'>, offset: number, limit: number) {
    return this.deps.deadLetters.search(deadLetterFilter(filter), offset, limit);
  }

  retryDeadLetters(input: BulkDeadLetterInput & { limit?: number | undefined }) {
    if (!hasFilter(input) && input.all !== true) throw errors.filterRequired('retrying dead letters');
    return this.deps.deadLetters.retryMatching(deadLetterFilter(input), input.limit ?? 100);
  }

  purgeDeadLetters(input: BulkDeadLetterInput) {
    if (!hasFilter(input) && input.all !== true) throw errors.filterRequired('purging dead letters');
    return this.deps.deadLetters.purgeMatching(deadLetterFilter(input));
  }

  /** Reconnects (or restarts) every matching instance; unlinked ones are skipped. */
  async reconnectMany(input: ReconnectManyInput) {
    if (!hasFilter(input) && input.all !== true) throw errors.filterRequired('reconnecting instances');
    const { targets, missing } = await this.select(input);
    type Result = { instanceId: string; outcome: 'done' | 'skipped' | 'failed'; error?: string };
    const results: Result[] = new Array<Result>(targets.length);
    let next = 0;
    const worker = async () => {
      while (next < targets.length) {
        const index = next++;
        results[index] = await this.reconnectOne(targets[index]!, input.mode ?? 'reconnect');
      }
    };
    await Promise.all(Array.from({ length: Math.min(RECONNECT_CONCURRENCY, targets.length) }, worker));
    for (const id of missing) results.push({ instanceId: id, outcome: 'skipped', error: 'instance not found' });
    const count = (outcome: Result['outcome']) => results.filter((r) => r.outcome === outcome).length;
    return { matched: targets.length + missing.length, done: count('done'), skipped: count('skipped'), failed: count('failed'), results };
  }

  private async reconnectOne(instance: Instance, mode: 'reconnect' | 'restart') {
    // Never linked to a phone: nothing to reconnect to (connecting would start pairing).
    if (instance.number === null) return { instanceId: instance.id, outcome: 'skipped' as const, error: 'not linked to a phone' };
    try {
      if (mode === 'restart') await this.deps.sessions.restart(instance);
      // Connected: drop and connect again. Otherwise connect now, without waiting for the automatic retry.
      else await this.deps.sessions.reconnect(instance);
      return { instanceId: instance.id, outcome: 'done' as const };
    } catch (error) {
      return { instanceId: instance.id, outcome: 'failed' as const, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async select(input: ReconnectManyInput): Promise<{ targets: Instance[]; missing: string[] }> {
    const matches = (instance: Instance) =>
      (input.status === undefined || input.status.includes(instance.status)) &&
      (input.network === undefined || input.network === instance.network);
    if (input.ids) {
      const ids = [...new Set(input.ids)];
      const found = await Promise.all(ids.map((id) => this.deps.instances.find(id)));
      return {
        targets: found.filter((instance): instance is Instance => instance !== undefined && matches(instance)),
        missing: ids.filter((_, i) => found[i] === undefined),
      };
    }
    const out: Instance[] = [];
    for (let offset = 0; ; offset += LIST_PAGE) {
      const { items } = await this.deps.instances.list(offset, LIST_PAGE);
      out.push(...items.filter(matches));
      if (items.length < LIST_PAGE) return { targets: out, missing: [] };
    }
  }
}
