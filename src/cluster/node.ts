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
import { Preferences, planTick } from './placement.js';
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
  /**
   * A phone is being linked to the instance here (a QR code or pairing code is shown): moving it
   * now would close that session and show the user a new code. It moves once linked or given up.
   */
  pairing?(instanceId: string): boolean;
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
  /** Claims made for a request (claimNow) still under way. */
  private readonly claims = new Map<string, Promise<boolean>>();
  /** The tick's claim of free instances, until what it took is registered in `held`. */
  private tickClaim: Promise<unknown> | undefined;
  /** Until when (performance.now()) the leases renewed last are surely still ours. */
  private validUntil = 0;
  private owners = new Map<string, string | null>();
  private addresses = new Map<string, string>();
  private candidates: string[] = [];
  /** Each instance's preferred process among `candidates` (placement.ts). */
  private readonly preferences = new Preferences();
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
    // A process that cannot announce itself does not start (its caller sees why).
    await this.tick();
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

  /** Heard from the database within the lease time (readiness: a process that cannot renew serves nothing). */
  healthy(): boolean {
    return !this.stopped && performance.now() < this.validUntil;
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
      const address = await this.addressOf(lease.owner);
      if (address) return { here: false, address };
      throw errors.instanceMoving(instanceId, 1);
    }
    const preferred = this.preferences.of(instanceId);
    if (preferred && preferred !== this.nodeId && hops === 0 && !this.draining) {
      const address = this.addresses.get(preferred);
      if (address) return { here: false, address };
    }
    if (await this.claimNow(instanceId)) return { here: true };
    // Another process took it meanwhile: the request goes there.
    const taken = await this.repo.lease(instanceId);
    const address = taken?.owner && taken.owner !== this.nodeId ? await this.addressOf(taken.owner) : undefined;
    if (address) return { here: false, address };
    throw errors.instanceMoving(instanceId, 1);
  }

  /** Where another process is reached; a process that joined since the last tick is looked up now. */
  private async addressOf(nodeId: string): Promise<string | undefined> {
    const known = this.addresses.get(nodeId);
    if (known) return known;
    const nodes = await this.repo.nodes(this.options.leaseMs, this.options.leaseMs * 10);
    for (const node of nodes) this.addresses.set(node.nodeId, node.address);
    return this.addresses.get(nodeId);
  }

  /** Takes a free instance at once (a request for it arrived); false when another process holds it. */
  async claimNow(instanceId: string): Promise<boolean> {
    if (this.stopped || this.draining) return false;
    if (this.held.has(instanceId)) {
      await this.arriving.get(instanceId);
      return this.owns(instanceId);
    }
    // Concurrent requests for the same free instance share one claim.
    const pending = this.claims.get(instanceId);
    if (pending) return pending;
    const claim = (async () => {
      const [taken] = await this.repo.claim(this.nodeId, [instanceId], this.options.leaseMs);
      if (taken) await this.take(taken);
      else {
        // This process's tick may have claimed it meanwhile: wait until it is registered here.
        await this.tickClaim;
        if (!this.held.has(instanceId)) return false;
        await this.arriving.get(instanceId);
      }
      return this.owns(instanceId);
    })().finally(() => this.claims.delete(instanceId));
    this.claims.set(instanceId, claim);
    return claim;
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
    // (Draining: stop() runs the last rounds itself; a tick finishing meanwhile schedules none.)
    if (this.stopped || this.draining) return;
    this.timer = setTimeout(() => {
      this.ticking = this.runTick().finally(() => {
        this.ticking = undefined;
        this.schedule();
      });
    }, this.options.tickMs);
  }

  /** One round now (heartbeat, renewal, balance): tests drive the node with it. */
  step(): Promise<void> {
    return this.runTick();
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
    // Only what was held before the renewal can be missing from it (a request may claim meanwhile).
    const heldBefore = [...this.held];
    const renewed = await this.repo.renew(this.nodeId, this.options.leaseMs);
    // Safe margin under the lease: the database's expiry is at least `leaseMs` after `started`.
    this.validUntil = started + this.options.leaseMs * 0.8;
    const still = new Map(renewed.map((lease) => [lease.instanceId, lease.epoch]));
    for (const [instanceId, epoch] of heldBefore) {
      if (this.held.get(instanceId) === epoch && still.get(instanceId) !== epoch && !this.moving.has(instanceId))
        await this.lose(instanceId);
    }
    for (const lease of renewed) if (!this.held.has(lease.instanceId)) await this.take(lease);

    const nodes = await this.repo.nodes(this.options.leaseMs, this.options.leaseMs * 10);
    this.addresses = new Map(nodes.map((node) => [node.nodeId, node.address]));
    this.candidates = nodes.filter((node) => node.live && !node.draining).map((node) => node.nodeId);
    this.leaderAddress = nodes.find((node) => node.live && node.leader)?.address;
    const leases = await this.repo.leases(this.options.leaseMs);
    this.preferences.use(this.candidates, leases.length);
    this.owners = new Map(leases.map((lease) => [lease.instanceId, lease.owner]));
    const plan = planTick(
      this.nodeId,
      this.draining ? [] : this.candidates,
      leases.map((lease) => ({ ...lease, owner: lease.owner === this.nodeId && !this.held.has(lease.instanceId) ? null : lease.owner })),
      this.options.movesPerTick,
      (instanceId) => this.preferences.of(instanceId),
      (instanceId) => this.hooks.pairing?.(instanceId) === true,
    );
    if (plan.claim.length > 0) {
      const claimed = this.repo.claim(this.nodeId, plan.claim, this.options.leaseMs);
      this.tickClaim = claimed.catch(() => undefined);
      let taken: HeldLease[];
      try {
        taken = await claimed;
      } finally {
        this.tickClaim = undefined;
      }
      // Every lease taken is registered at once (requests for it wait for its resume rather than
      // claim it again); a dead process's instances come back ADOPT_PARALLEL at a time (each resume
      // waits on its own I/O).
      const starts: (() => void)[] = [];
      const arrivals = taken.map((lease) => this.take(lease, new Promise<void>((start) => starts.push(start))));
      let next = 0;
      const worker = async () => {
        while (next < arrivals.length) {
          const i = next;
          next += 1;
          starts[i]!();
          await arrivals[i];
        }
      };
      await Promise.all(Array.from({ length: Math.min(ADOPT_PARALLEL, arrivals.length) }, worker));
    }
    for (const instanceId of plan.release) if (this.held.has(instanceId)) await this.handOver(instanceId);
  }

  /** Registers a lease taken; its session resumes once `gate` resolves (at once by default). */
  private take(lease: HeldLease, gate: Promise<void> = Promise.resolve()): Promise<void> {
    const { instanceId } = lease;
    // Already taken at this epoch (the renewal saw a claim made for a request): one resume only.
    if (this.held.get(instanceId) === lease.epoch) return this.arriving.get(instanceId) ?? Promise.resolve();
    this.held.set(instanceId, lease.epoch);
    this.owners.set(instanceId, this.nodeId);
    const arrival = gate
      .then(() => this.hooks.adopt(instanceId))
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
