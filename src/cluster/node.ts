/**
 * This process as a member of a cluster: it announces itself, renews the leases it holds, takes the
 * free instances that prefer it (placement.ts) and hands over those another process now prefers,
 * a few per tick. Every move is clean: the old owner closes the session, lets its events be stored
 * and its deliveries finish, then gives the lease back; the next owner takes it (its epoch grows by
 * one) and resumes. An owner that stops renewing (crash, pause, partition) loses its leases when
 * they expire; the others take them then. What it still tries to write is refused by the fence.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { errors } from '../errors.js';
import type { WriteFence } from '../storage/fence.js';
import type { Database } from '../storage/schema.js';
import { planTick, preferredNode } from './placement.js';
import type { ClusterRepo, HeldLease } from './repo.js';

export interface ClusterNodeOptions {
  leaseMs: number;
  tickMs: number;
  movesPerTick: number;
}

/** What the gateway does when an instance arrives here or leaves. */
export interface OwnershipHooks {
  /** The lease is ours: open the session (when linked) and resume its deliveries. */
  adopt(instanceId: string): Promise<void>;
  /** The lease goes: close the session, let its events be stored and its deliveries stop. */
  drop(instanceId: string): Promise<void>;
}

/** Where a request for an instance is served. */
export type Placement = { here: true } | { here: false; address: string };

/** Instances resumed at once when many arrive together (a process died). */
const ADOPT_PARALLEL = 16;

export function newNodeId(): string {
  return `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

export class ClusterNode {
  readonly nodeId = newNodeId();
  /** Instances whose lease this process holds, with the epoch it holds it at. */
  private readonly held = new Map<string, number>();
  /** Hand-overs under way (requests for them wait, then go to the next owner). */
  private readonly moving = new Map<string, Promise<void>>();
  /** Instances being resumed here (requests for them wait until their session is back). */
  private readonly arriving = new Map<string, Promise<void>>();
  /** Until when (performance.now()) the leases renewed last are surely still ours. */
  private validUntil = 0;
  private owners = new Map<string, string | null>();
  private addresses = new Map<string, string>();
  private candidates: string[] = [];
  private leaderAddress: string | undefined;
  private address = '';
  private leader = false;
  private draining = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private failures = 0;

  constructor(
    private readonly repo: ClusterRepo,
    private readonly options: ClusterNodeOptions,
    private readonly hooks: OwnershipHooks,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Joins: announces this process at `address` and runs the first tick. */
  async start(address: string): Promise<void> {
    this.address = address;
    this.log.info({ node: this.nodeId, address }, 'joining the cluster');
    await this.runTick();
    this.schedule();
  }

  /** Whether this process holds the deployment's lock (admin routes and deployment-wide jobs). */
  setLeader(leader: boolean): void {
    this.leader = leader;
  }

  /** This process may act for the instance now: it holds the lease, is not handing it over, and the lease surely has not run out. */
  owns(instanceId: string): boolean {
    return this.held.has(instanceId) && !this.moving.has(instanceId) && performance.now() < this.validUntil;
  }

  /** Epoch of the lease held (the fence compares it), also while handing over. */
  epochOf(instanceId: string): number | undefined {
    return this.held.get(instanceId);
  }

  heldCount(): number {
    return this.held.size;
  }

  /** The write fence for storage (storage/fence.ts). */
  readonly fence: WriteFence = (trx: Kysely<Database>, instanceIds: string[]) =>
    this.repo.stale(trx, this.nodeId, [...new Set(instanceIds)].sort(), (id) => this.epochOf(id));

  /** Where admin routes are served: here, the leader, or undefined while no process leads. */
  leaderPlacement(): Placement | undefined {
    if (this.leader) return { here: true };
    return this.leaderAddress ? { here: false, address: this.leaderAddress } : undefined;
  }

  /**
   * Where a request for the instance is served. `hops` counts the processes it came through: a
   * forwarded request that finds the instance free takes it here rather than travel again.
   */
  async place(instanceId: string, hops: number): Promise<Placement> {
    await this.moving.get(instanceId);
    await this.arriving.get(instanceId);
    if (this.owns(instanceId)) return { here: true };
    const known = this.owners.get(instanceId);
    if (known && known !== this.nodeId) {
      const address = this.addresses.get(known);
      if (address) return { here: false, address };
    }
    const lease = await this.repo.lease(instanceId);
    // Deleted meanwhile: the route answers its 404 here.
    if (!lease) return { here: true };
    if (lease.owner && lease.owner !== this.nodeId) {
      const address = this.addresses.get(lease.owner);
      if (address) return { here: false, address };
      throw errors.instanceMoving(instanceId, 1);
    }
    const preferred = preferredNode(instanceId, this.candidates);
    if (preferred && preferred !== this.nodeId && hops === 0 && !this.draining) {
      const address = this.addresses.get(preferred);
      if (address) return { here: false, address };
    }
    if (await this.claimNow(instanceId)) return { here: true };
    throw errors.instanceMoving(instanceId, 1);
  }

  /** Takes a free instance at once (a request for it arrived); false when another process holds it. */
  async claimNow(instanceId: string): Promise<boolean> {
    if (this.stopped || this.draining) return false;
    if (this.held.has(instanceId)) return this.owns(instanceId);
    const [taken] = await this.repo.claim(this.nodeId, [instanceId], this.options.leaseMs);
    if (taken) await this.take(taken);
    // Not taken: this process's own tick may have claimed it a moment before (it is held here once that tick has gone on).
    else await this.ticking?.catch(() => undefined);
    await this.arriving.get(instanceId);
    return this.owns(instanceId);
  }

  /** Leaves: takes nothing more, hands every instance over cleanly, and says goodbye. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.draining = true;
    clearTimeout(this.timer);
    await this.ticking?.catch(() => undefined);
    this.stopped = true;
    try {
      await this.repo.heartbeat(this.nodeId, this.address, true, false);
      for (const instanceId of [...this.held.keys()]) await this.handOver(instanceId);
      await this.repo.removeNode(this.nodeId);
    } catch (error) {
      this.log.warn({ err: error }, 'could not hand every instance over; the others take them at lease expiry');
      for (const instanceId of [...this.held.keys()]) await this.lose(instanceId);
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.runTick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, this.options.tickMs);
  }

  private async runTick(): Promise<void> {
    try {
      await this.tick();
      this.failures = 0;
    } catch (error) {
      this.failures += 1;
      if (this.failures === 1 || this.failures % 20 === 0) this.log.warn({ err: error, failures: this.failures }, 'cluster tick failed');
      // The leases may run out while the database is away: act for nothing once they surely might have.
      if (performance.now() >= this.validUntil && this.held.size > 0) {
        this.log.error({ held: this.held.size }, 'could not renew leases in time; closing the sessions held here');
        for (const instanceId of [...this.held.keys()]) await this.lose(instanceId);
      }
    }
  }

  private async tick(): Promise<void> {
    const started = performance.now();
    await this.repo.heartbeat(this.nodeId, this.address, this.draining, this.leader);
    // Only what was held before the renewal can be missing from it (a request may take an instance meanwhile: claimNow).
    const before = new Map(this.held);
    const renewed = await this.repo.renew(this.nodeId, this.options.leaseMs);
    // Safe margin under the lease: the database's expiry is at least `leaseMs` after `started`.
    this.validUntil = started + this.options.leaseMs * 0.8;
    const still = new Map(renewed.map((lease) => [lease.instanceId, lease.epoch]));
    for (const [instanceId, epoch] of before) {
      if (this.held.get(instanceId) !== epoch) continue;
      if (still.get(instanceId) !== epoch && !this.moving.has(instanceId)) await this.lose(instanceId);
    }
    for (const lease of renewed) if (!this.held.has(lease.instanceId)) await this.take(lease);

    const nodes = await this.repo.nodes(this.options.leaseMs, this.options.leaseMs * 10);
    this.addresses = new Map(nodes.map((node) => [node.nodeId, node.address]));
    this.candidates = nodes.filter((node) => node.live && !node.draining).map((node) => node.nodeId);
    this.leaderAddress = nodes.find((node) => node.live && node.leader)?.address;
    const leases = await this.repo.leases(this.options.leaseMs);
    this.owners = new Map(leases.map((lease) => [lease.instanceId, lease.owner]));
    const plan = planTick(
      this.nodeId,
      this.draining ? [] : this.candidates,
      leases.map((lease) => ({ ...lease, owner: lease.owner === this.nodeId && !this.held.has(lease.instanceId) ? null : lease.owner })),
      this.options.movesPerTick,
    );
    if (plan.claim.length > 0) {
      const taken = await this.repo.claim(this.nodeId, plan.claim, this.options.leaseMs);
      // A dead process's instances come back in parallel (each resume waits on its own I/O).
      for (let i = 0; i < taken.length; i += ADOPT_PARALLEL)
        await Promise.all(taken.slice(i, i + ADOPT_PARALLEL).map((lease) => this.take(lease)));
    }
    for (const instanceId of plan.release) if (this.held.has(instanceId)) await this.handOver(instanceId);
  }

  private take(lease: HeldLease): Promise<void> {
    const { instanceId } = lease;
    this.held.set(instanceId, lease.epoch);
    this.owners.set(instanceId, this.nodeId);
    const arrival = this.hooks
      .adopt(instanceId)
      .catch((error: unknown) => this.log.warn({ err: error, instanceId }, 'could not resume an instance taken over'))
      .finally(() => this.arriving.delete(instanceId));
    this.arriving.set(instanceId, arrival);
    return arrival;
  }

  /** A clean hand-over: drop locally while the lease still fences our writes, then give it back. */
  private handOver(instanceId: string): Promise<void> {
    const existing = this.moving.get(instanceId);
    if (existing) return existing;
    const epoch = this.held.get(instanceId);
    if (epoch === undefined) return Promise.resolve();
    const move = (async () => {
      try {
        await this.hooks.drop(instanceId);
      } catch (error) {
        this.log.warn({ err: error, instanceId }, 'could not close an instance cleanly before handing it over');
      }
      this.held.delete(instanceId);
      this.owners.set(instanceId, null);
      await this.repo.release(this.nodeId, { instanceId, epoch });
    })().finally(() => this.moving.delete(instanceId));
    this.moving.set(instanceId, move);
    return move;
  }

  /** The lease is gone (expired or taken): stop acting at once; nothing is written for it any more. */
  private async lose(instanceId: string): Promise<void> {
    this.held.delete(instanceId);
    this.log.warn({ instanceId }, 'lost the lease of an instance; closing its session here');
    try {
      await this.hooks.drop(instanceId);
    } catch (error) {
      this.log.warn({ err: error, instanceId }, 'could not close a session whose lease was lost');
    }
  }
}
