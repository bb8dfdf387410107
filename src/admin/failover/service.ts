/**
 * Failover groups: several instances answer as one. A group token (`wgg_…`, only its SHA-256 kept)
 * is accepted as the `apikey` of the /send/* routes; each send goes to one member picked by the
 * group's policy among the connected members whose health score is at least `minHealth` (with
 * `sticky`, a recipient keeps the member that last served it while that member is eligible). A send
 * the member refused before it reached the network is tried on the next eligible member; one that
 * failed on the way is never sent again. Groups, members and tokens live in the database and in
 * memory (read at start; this process is the only writer while it is the active one), and so are
 * the sticky recipients (the latest 100 000).
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { newId, randomToken, type Clock } from '../../clock.js';
import { AppError, errors } from '../../errors.js';
import type { Instance, InstanceService } from '../../instance-registry/service.js';
import { hashToken } from '../../instance-registry/tokens.js';
import type { ClusterForwarding } from '../../cluster/routing.js';
import type { HealthSource } from '../../modules.js';
import type { OutgoingMessage } from '../../network/port.js';
import { sendOutcomeOf, type SendResult, type SendRouter } from '../../outgoing/service.js';
import type { FailoverRepo, GroupRecord, GroupToken, Policy } from './repo.js';

export const GROUP_TOKEN_PREFIX = 'wgg_';
const GROUP_TOKEN_SHAPE = /^wgg_[A-Za-z0-9_-]{43}$/;
/** /send/* under /api/v1 or unprefixed (deprecated): the only routes a group token may call. */
const SEND_ROUTE = /^(\/api\/v1)?\/send\//;
/** Recipients remembered for sticky groups (oldest forgotten first). */
const MAX_STICKY = 100_000;
/** least-loaded counts the sends of the last minute after the sends in flight. */
const LOAD_WINDOW_MS = 60_000;
const NONE: ReadonlySet<string> = new Set();
/**
 * Cluster mode: a group-shaped token found in no table is not looked up again for this long, so a
 * flood of made-up tokens costs no query each. A notice of a change (`loadAll`) forgets the misses.
 */
const UNKNOWN_TOKEN_MS = 5_000;
const MAX_UNKNOWN_TOKENS = 10_000;

/** A member's group sends: in flight now, and per 10-second step over the last minute. */
interface Load {
  inFlight: number;
  steps: { start: number; count: number }[];
}

export interface CreateGroupInput {
  name: string;
  members: string[];
  policy?: Policy | undefined;
  minHealth?: number | undefined;
  sticky?: boolean | undefined;
  webhookUrl?: string | undefined;
  webhookSecret?: string | undefined;
}

export interface UpdateGroupInput {
  name?: string | undefined;
  members?: string[] | undefined;
  policy?: Policy | undefined;
  minHealth?: number | undefined;
  sticky?: boolean | undefined;
  webhookUrl?: string | null | undefined;
  webhookSecret?: string | undefined;
}

interface Candidate {
  instance: Instance;
  score: number;
  reasons: string[];
}

export interface FailoverDeps {
  repo: FailoverRepo;
  instances: InstanceService;
  health: HealthSource;
  clock: Clock;
  tokenGraceSeconds: number;
  log: FastifyBaseLogger;
  /** Called once per group with a webhook sink name (module.ts adds the group's durable sink). */
  groupAdded: (groupId: string) => void;
  /**
   * Cluster mode: other processes change groups too. Called after each change made here (module.ts
   * tells the other processes, which `loadAll`); and a token not known here is looked up in the
   * database before it is refused.
   */
  changed?: () => void;
  /** Cluster mode: a member held by another process is tried there (the request is passed on to it). */
  forwarding?: ClusterForwarding;
}

/** Set by the process that passes a group send on: the member to try there, and the members tried before. */
const MEMBER_HEADER = 'x-waygate-failover-member';
const TRIED_HEADER = 'x-waygate-failover-tried';

/** What a group-token request's instance carries: its group, the request, and for a request another process passed on, the members already tried (the instance is the one to try). */
interface Route {
  group: GroupRecord;
  request: FastifyRequest;
  /** The member found eligible when the request was authenticated (its send reuses the check). */
  checked: Candidate;
  tried?: string[];
}

/**
 * The route travels on the instance object the resolver made for the request, in a property only
 * this module knows: not copied by a spread or written by JSON. (A WeakMap keyed by these short-lived
 * objects made every scavenge of a group-send load three times as long.)
 */
const ROUTE = Symbol('failover route');
const routeOf = {
  get: (instance: Instance): Route | undefined => (instance as Instance & { [ROUTE]?: Route })[ROUTE],
  /**
   * A copy of `instance` carrying `route`. The hidden property comes first: added to a spread copy,
   * it gave every group send's instance a hidden class of its own on Node 20 (docs/architecture.md).
   */
  copyWith: (instance: Instance, route: Route): Instance =>
    Object.assign(Object.defineProperty({}, ROUTE, { value: route, enumerable: false, writable: true, configurable: true }), instance),
};

export function sinkNameOf(groupId: string): string {
  return `group:${groupId}`;
}

export class FailoverService implements SendRouter {
  private readonly groups = new Map<string, GroupRecord>();
  private readonly tokens = new Map<string, GroupToken>();
  private readonly turns = new Map<string, number>();
  private readonly stickyMembers = new Map<string, string>();
  private readonly lastServed = new Map<string, string>();
  private readonly load = new Map<string, Load>();
  /** Sticky assignments being written (a send never waits for one). */
  private readonly writes = new Set<Promise<void>>();
  /** Cluster mode: token hashes looked up and not found, until when the miss holds. */
  private readonly unknownTokens = new Map<string, number>();
  /** Counts `loadAll`s, so a lookup that overlapped one does not remember a miss it may have made stale. */
  private loads = 0;

  constructor(private readonly deps: FailoverDeps) {}

  /** Reads every group, token and sticky recipient (at start, and again when this process becomes the active one). */
  async loadAll(): Promise<void> {
    const [groups, tokens, sticky] = await Promise.all([this.deps.repo.all(), this.deps.repo.tokens(), this.deps.repo.sticky(MAX_STICKY)]);
    // Swapped in one step, so a request never sees the maps half filled.
    this.groups.clear();
    this.tokens.clear();
    this.stickyMembers.clear();
    this.unknownTokens.clear();
    this.loads += 1;
    for (const group of groups) {
      this.groups.set(group.id, group);
      this.deps.groupAdded(group.id);
    }
    for (const token of tokens) this.tokens.set(token.hash, token);
    for (const { groupId, recipient, instanceId } of sticky) this.stickyMembers.set(`${groupId}\u0000${recipient}`, instanceId);
  }

  /** Resolves once the sticky assignments written so far are stored (at close). */
  async settled(): Promise<void> {
    await Promise.all([...this.writes]);
  }

  group(groupId: string): GroupRecord | undefined {
    return this.groups.get(groupId);
  }

  /** An instance was deleted: it leaves every group (the database cascade already removed its rows). */
  instanceDeleted(instanceId: string): void {
    let changed = false;
    for (const group of this.groups.values()) {
      if (!group.members.includes(instanceId)) continue;
      group.members = group.members.filter((id) => id !== instanceId);
      changed = true;
    }
    if (changed) this.deps.changed?.();
  }

  // ---- administration ----

  async create(input: CreateGroupInput): Promise<{ group: GroupRecord; token: string }> {
    this.checkName(input.name);
    await this.checkMembers(input.members);
    const now = this.deps.clock.now();
    const group: GroupRecord = {
      id: newId(),
      name: input.name,
      policy: input.policy ?? 'priority',
      minHealth: input.minHealth ?? 50,
      sticky: input.sticky ?? true,
      webhookUrl: input.webhookUrl ?? null,
      webhookSecret: input.webhookSecret ?? randomToken(32),
      members: input.members,
      createdAt: now,
      updatedAt: now,
    };
    const token = GROUP_TOKEN_PREFIX + randomToken(32);
    const hash = hashToken(token);
    await this.deps.repo.insert(group, hash);
    this.groups.set(group.id, group);
    this.tokens.set(hash, { hash, groupId: group.id, validUntil: null });
    this.deps.groupAdded(group.id);
    this.deps.changed?.();
    return { group, token };
  }

  list(offset: number, limit: number): { items: GroupRecord[]; total: number } {
    const all = [...this.groups.values()];
    return { items: all.slice(offset, offset + limit), total: all.length };
  }

  get(groupId: string): GroupRecord {
    const group = this.groups.get(groupId);
    if (!group) throw errors.failoverGroupNotFound(groupId);
    return group;
  }

  async update(groupId: string, patch: UpdateGroupInput): Promise<GroupRecord> {
    const current = this.get(groupId);
    if (patch.name !== undefined && patch.name !== current.name) this.checkName(patch.name);
    if (patch.members !== undefined) await this.checkMembers(patch.members);
    const next: GroupRecord = {
      ...current,
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.members !== undefined ? { members: patch.members } : {}),
      ...(patch.policy !== undefined ? { policy: patch.policy } : {}),
      ...(patch.minHealth !== undefined ? { minHealth: patch.minHealth } : {}),
      ...(patch.sticky !== undefined ? { sticky: patch.sticky } : {}),
      ...(patch.webhookUrl !== undefined ? { webhookUrl: patch.webhookUrl } : {}),
      ...(patch.webhookSecret !== undefined ? { webhookSecret: patch.webhookSecret } : {}),
      updatedAt: this.deps.clock.now(),
    };
    await this.deps.repo.update(next);
    // Mutated in place: the routed requests in flight and the webhook sink hold this record.
    Object.assign(current, next);
    this.deps.changed?.();
    return current;
  }

  async delete(groupId: string): Promise<void> {
    this.get(groupId);
    await this.deps.repo.delete(groupId, sinkNameOf(groupId));
    this.groups.delete(groupId);
    for (const [hash, token] of this.tokens) if (token.groupId === groupId) this.tokens.delete(hash);
    for (const key of this.stickyMembers.keys()) if (key.startsWith(`${groupId}\u0000`)) this.stickyMembers.delete(key);
    this.turns.delete(groupId);
    this.lastServed.delete(groupId);
    this.deps.changed?.();
  }

  /** Like an instance token: a new primary; the old one works until now + TOKEN_GRACE_SECONDS. */
  async rotateToken(groupId: string): Promise<{ newToken: string; oldTokenValidUntil: string }> {
    this.get(groupId);
    const now = this.deps.clock.now();
    const graceUntil = now + this.deps.tokenGraceSeconds * 1000;
    const token = GROUP_TOKEN_PREFIX + randomToken(32);
    const hash = hashToken(token);
    await this.deps.repo.rotateToken(groupId, hash, graceUntil, now);
    for (const [key, old] of this.tokens) {
      if (old.groupId !== groupId) continue;
      if (old.validUntil === null) old.validUntil = graceUntil;
      else if (old.validUntil <= now) this.tokens.delete(key);
    }
    this.tokens.set(hash, { hash, groupId, validUntil: null });
    this.deps.changed?.();
    return { newToken: token, oldTokenValidUntil: new Date(graceUntil).toISOString() };
  }

  /** Members with their instance, health and whether they are eligible; `serving` is who sends next. */
  async view(group: GroupRecord) {
    const candidates = await this.eligible(group);
    const serving = this.preview(group, candidates);
    const members = await Promise.all(
      group.members.map(async (id) => {
        const instance = await this.deps.instances.find(id);
        const health = instance ? await this.deps.health.scoreOf(id) : { score: 0, reasons: ['instance deleted'] };
        return {
          instanceId: id,
          instanceName: instance?.name ?? null,
          status: instance?.status ?? null,
          health,
          eligible: candidates.some((c) => c.instance.id === id),
          serving: serving === id,
        };
      }),
    );
    return {
      groupId: group.id,
      name: group.name,
      policy: group.policy,
      minHealth: group.minHealth,
      sticky: group.sticky,
      webhookUrl: group.webhookUrl,
      members,
      serving,
      createdAt: new Date(group.createdAt).toISOString(),
      updatedAt: new Date(group.updatedAt).toISOString(),
    };
  }

  // ---- authentication (deps.resolvers.instance) ----

  /**
   * A group token on an instance route: undefined for any other key. On /send/* it answers a member
   * (the first eligible one, so a route that reads the caller before sending has an instance); the
   * member that really sends is picked at send time (`send`). Other routes: 403.
   */
  resolve(key: string, request: FastifyRequest, keyHash?: string): Promise<Instance | undefined> | undefined {
    // Any other key: answered at once, so an instance token's request awaits nothing here.
    return key.startsWith(GROUP_TOKEN_PREFIX) ? this.resolveGroupToken(key, request, keyHash) : undefined;
  }

  private async resolveGroupToken(key: string, request: FastifyRequest, keyHash?: string): Promise<Instance> {
    if (!GROUP_TOKEN_SHAPE.test(key)) throw errors.invalidApiKey();
    const hash = keyHash ?? hashToken(key);
    if (!this.tokens.has(hash) && this.deps.changed && (await this.storedElsewhere(hash))) await this.loadAll();
    const token = this.tokens.get(hash);
    const group = token ? this.groups.get(token.groupId) : undefined;
    if (!token || !group) throw errors.invalidApiKey();
    if (token.validUntil !== null && token.validUntil <= this.deps.clock.now()) throw errors.tokenExpired();
    if (!SEND_ROUTE.test(request.routeOptions.url ?? '')) throw errors.groupTokenSendOnly();
    const pin = this.pinOf(request, group);
    const first = (pin && (await this.candidate(group, pin.member))) ?? (await this.firstEligible(group, new Set(pin?.tried)));
    if (!first) throw this.noMember(group);
    const provisional = routeOf.copyWith(first.instance, { group, request, checked: first, ...(pin ? { tried: pin.tried } : {}) });
    // Cluster mode: the member that sends may be held by another process, found once the body is used.
    this.deps.forwarding?.keepBody(request);
    return provisional;
  }

  /** Cluster mode: whether a token not known here was stored by another process (a miss is remembered a while). */
  private async storedElsewhere(hash: string): Promise<boolean> {
    const now = this.deps.clock.now();
    const missUntil = this.unknownTokens.get(hash);
    if (missUntil !== undefined && missUntil > now) return false;
    const loads = this.loads;
    if (await this.deps.repo.hasToken(hash)) return true;
    this.unknownTokens.delete(hash);
    if (loads === this.loads) {
      this.unknownTokens.set(hash, now + UNKNOWN_TOKEN_MS);
      // Map order is insertion order: the oldest miss goes first.
      if (this.unknownTokens.size > MAX_UNKNOWN_TOKENS) this.unknownTokens.delete(this.unknownTokens.keys().next().value!);
    }
    return false;
  }

  /** A send another process of the cluster passed on: the member it picked, and those it tried. */
  private pinOf(request: FastifyRequest, group: GroupRecord): { member: string; tried: string[] } | undefined {
    if (!this.deps.forwarding?.forwarded(request)) return undefined;
    const member = request.headers[MEMBER_HEADER];
    const tried = request.headers[TRIED_HEADER];
    if (typeof member !== 'string' || !group.members.includes(member)) return undefined;
    return { member, tried: typeof tried === 'string' && tried !== '' ? tried.split(',') : [] };
  }

  // ---- sending (SendRouter) ----

  routes(instance: Instance): boolean {
    return routeOf.get(instance) !== undefined;
  }

  async send(instance: Instance, message: OutgoingMessage, attempt: (member: Instance) => Promise<SendResult>): Promise<SendResult> {
    const route = routeOf.get(instance);
    if (!route) return attempt(instance);
    const { group, request } = route;
    const recipient = 'to' in message ? message.to : undefined;
    // Passed on by another process: the member it picked (the resolver's), unless no longer eligible.
    // The member checked when the request was authenticated is not checked again for its first try.
    let candidate = route.tried
      ? ((await this.candidate(group, instance.id, route.checked)) ?? (await this.firstEligible(group, new Set(route.tried))))
      : await this.choose(group, recipient, route.checked);
    if (!candidate) throw this.noMember(group);
    const tried = new Set<string>(route.tried);
    let refusal: unknown;
    // The chosen member, then the other eligible ones in priority order (eligibility read again: a
    // refusal often means the member just dropped, and others may have too).
    for (; candidate; candidate = await this.firstEligible(group, tried)) {
      const member = candidate.instance;
      tried.add(member.id);
      const load = this.loadOf(member.id);
      load.inFlight += 1;
      try {
        const sent = await attempt(member);
        this.countSend(load);
        this.lastServed.set(group.id, member.id);
        if (group.sticky && recipient !== undefined) this.remember(group.id, recipient, member.id);
        return sent;
      } catch (error) {
        // Only a send that never reached the network may go to the next member.
        if (sendOutcomeOf(error) !== 'refused') throw error;
        // Held by another process (cluster mode): the request goes there, to be tried with this member.
        const passedOn = this.deps.forwarding?.forwardWith(
          error,
          request,
          { [MEMBER_HEADER]: member.id, [TRIED_HEADER]: [...tried].join(',') },
          () => (load.inFlight -= 1),
        );
        if (passedOn) {
          // The member's process sends (and stores a sticky assignment). This process picks the
          // group's next sends (it holds the first member), so it counts the send as the member's,
          // in flight until the answer has gone back, and keeps the recipient's member too.
          load.inFlight += 1;
          this.countSend(load);
          this.lastServed.set(group.id, member.id);
          if (group.sticky && recipient !== undefined) this.remember(group.id, recipient, member.id, { store: false });
          throw error;
        }
        refusal = error;
      } finally {
        load.inFlight -= 1;
      }
    }
    const last = refusal instanceof AppError ? refusal.message : 'refused';
    throw errors.failoverNoEligibleMember(group.name, `every eligible member refused the send (last: ${last})`);
  }

  // ---- picking ----

  /** A member when it is connected with health >= minHealth (`checked`: this request found it so already). */
  private async candidate(group: GroupRecord, id: string, checked?: Candidate): Promise<Candidate | undefined> {
    if (checked?.instance.id === id) return checked;
    const instance = await this.deps.instances.find(id);
    if (!instance || instance.status !== 'CONNECTED') return undefined;
    const { score, reasons } = await this.deps.health.scoreOf(id);
    return score >= group.minHealth ? { instance, score, reasons } : undefined;
  }

  /** Every eligible member, in priority order. */
  private async eligible(group: GroupRecord, checked?: Candidate): Promise<Candidate[]> {
    const out: Candidate[] = [];
    for (const id of group.members) {
      const found = await this.candidate(group, id, checked);
      if (found) out.push(found);
    }
    return out;
  }

  /** The first eligible member in priority order not in `skip` (reads no further than needed). */
  private async firstEligible(group: GroupRecord, skip: ReadonlySet<string>, checked?: Candidate): Promise<Candidate | undefined> {
    for (const id of group.members) {
      if (skip.has(id)) continue;
      const found = await this.candidate(group, id, checked);
      if (found) return found;
    }
    return undefined;
  }

  /** Sticky recipient's member while eligible, else the policy's pick; undefined when none is eligible. */
  private async choose(group: GroupRecord, recipient: string | undefined, checked?: Candidate): Promise<Candidate | undefined> {
    if (group.sticky && recipient !== undefined) {
      const kept = this.stickyMembers.get(`${group.id}\u0000${recipient}`);
      const found = kept === undefined || !group.members.includes(kept) ? undefined : await this.candidate(group, kept, checked);
      if (found) return found;
    }
    if (group.policy === 'priority') return this.firstEligible(group, NONE, checked);
    const candidates = await this.eligible(group, checked);
    if (candidates.length === 0) return undefined;
    if (group.policy === 'least-loaded') return this.leastLoaded(candidates);
    const turn = this.turns.get(group.id) ?? 0;
    this.turns.set(group.id, turn + 1);
    return candidates[turn % candidates.length]!;
  }

  /** Who the next send without a sticky recipient would go to, without taking a turn. */
  private preview(group: GroupRecord, candidates: Candidate[]): string | null {
    if (candidates.length === 0) return null;
    const last = this.lastServed.get(group.id);
    if (group.policy === 'priority') return candidates[0]!.instance.id;
    if (group.policy === 'least-loaded') return this.leastLoaded(candidates).instance.id;
    if (last !== undefined && candidates.some((c) => c.instance.id === last)) return last;
    return candidates[(this.turns.get(group.id) ?? 0) % candidates.length]!.instance.id;
  }

  private leastLoaded(candidates: Candidate[]): Candidate {
    const now = this.deps.clock.now();
    const weight = (c: Candidate) => {
      const load = this.loadOf(c.instance.id);
      const recent = load.steps.reduce((sum, step) => (step.start > now - LOAD_WINDOW_MS ? sum + step.count : sum), 0);
      return [load.inFlight, recent] as const;
    };
    let best = candidates[0]!;
    let bestWeight = weight(best);
    for (const candidate of candidates.slice(1)) {
      const w = weight(candidate);
      if (w[0] < bestWeight[0] || (w[0] === bestWeight[0] && w[1] < bestWeight[1])) {
        best = candidate;
        bestWeight = w;
      }
    }
    return best;
  }

  private remember(groupId: string, recipient: string, instanceId: string, { store = true } = {}): void {
    const key = `${groupId}\u0000${recipient}`;
    if (this.stickyMembers.get(key) === instanceId) return;
    this.stickyMembers.delete(key);
    this.stickyMembers.set(key, instanceId);
    if (this.stickyMembers.size > MAX_STICKY) this.stickyMembers.delete(this.stickyMembers.keys().next().value!);
    if (!store) return;
    // Kept across restarts; written only when the member changes, never waited for by the send.
    const write = this.deps.repo
      .setSticky(groupId, recipient, instanceId, this.deps.clock.now())
      .catch((error: unknown) => this.deps.log.warn({ err: error, groupId }, 'could not store a sticky recipient'))
      .finally(() => this.writes.delete(write));
    this.writes.add(write);
  }

  private loadOf(instanceId: string): Load {
    let load = this.load.get(instanceId);
    if (!load) {
      load = { inFlight: 0, steps: [] };
      this.load.set(instanceId, load);
    }
    return load;
  }

  /** Sends counted in 10-second steps; only the last minute's steps are kept. */
  private countSend(load: Load): void {
    const now = this.deps.clock.now();
    const start = now - (now % 10_000);
    const last = load.steps.at(-1);
    if (last?.start === start) {
      last.count += 1;
      return;
    }
    load.steps.push({ start, count: 1 });
    while (load.steps.length > 0 && load.steps[0]!.start <= now - LOAD_WINDOW_MS) load.steps.shift();
  }

  private noMember(group: GroupRecord): AppError {
    return errors.failoverNoEligibleMember(group.name, `no member is connected with a health score of at least ${group.minHealth}`);
  }

  private checkName(name: string): void {
    for (const group of this.groups.values()) if (group.name === name) throw errors.failoverGroupNameTaken(name);
  }

  private async checkMembers(members: string[]): Promise<void> {
    const existing = await this.deps.repo.existingInstances(members);
    const unknown = members.filter((id) => !existing.has(id));
    if (unknown.length > 0) throw errors.failoverUnknownMembers(unknown);
  }
}
