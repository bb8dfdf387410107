/**
 * Cluster mode with real gateway processes (issue 17) on one PostgreSQL schema and one Redis: 300
 * sandbox instances spread over three processes; one process killed with SIGKILL under load (its
 * instances come back connected elsewhere within 10 s, every accepted send is delivered); a rolling
 * restart that loses nothing; and a paused owner (SIGSTOP past its lease) that cannot act or write
 * for the instances taken from it once it resumes.
 *
 * The tests run in order on the same cluster and instances (each one starts from the state the
 * previous left); the rolling restart and the pause use the same instances. CLUSTER_PROC_INSTANCES
 * sets how many (300 by default; creating them takes 40-50 s on a loaded 2-core machine, so the file
 * takes 2-3 minutes there).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import {
  PG_URL,
  createInstance,
  httpApi,
  newSchemaName,
  uniqueNumber,
  waitFor,
  type ApiTarget,
  type TestInstance,
} from './support/gateway.js';
import { freePort, spawnGateway, type GatewayProcess } from './support/process.js';
import { WebhookReceiver } from './support/receiver.js';

const INSTANCES = Number(process.env.CLUSTER_PROC_INSTANCES ?? 300);
const LEASE_MS = 4000;
const TICK_MS = 500;
const ADMIN_KEY = `admin-${randomBytes(12).toString('hex')}`;
const schema = newSchemaName();
const receiver = new WebhookReceiver();
const baseEnv = {
  DATABASE_URL: PG_URL,
  DATABASE_SCHEMA: schema,
  GLOBAL_API_KEY: ADMIN_KEY,
  CLUSTER_SECRET: randomBytes(32).toString('base64url'),
  KV_STORE_URL: 'redis://127.0.0.1:6379',
  KV_STORE_PREFIX: `wgp${randomBytes(3).toString('hex')}:`,
  CLUSTER_LEASE_MS: String(LEASE_MS),
  CLUSTER_TICK_MS: String(TICK_MS),
  STANDBY_POLL_MS: '200',
  WEBHOOK_RETRY_BASE_MS: '50',
  WEBHOOK_RETRY_MAX_MS: '500',
  WEBHOOK_MAX_ATTEMPTS: '100',
  // One client (this test) sends everything: no rate limit in the way.
  RATE_LIMIT_PER_IP: '1000000',
  RATE_LIMIT_PER_KEY: '1000000',
};

interface Proc extends GatewayProcess {
  pid: number;
  dataDir: string;
}

const all: Proc[] = [];
/** The processes of the cluster now (live, in start order). */
let procs: Proc[] = [];
let instances: TestInstance[] = [];
let db: pg.Pool;

async function startProcess(): Promise<Proc> {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-cluster-proc-'));
  const gw = await spawnGateway({ ...baseEnv, DATA_DIR: dataDir, CLUSTER_ADVERTISE_URL: `http://127.0.0.1:${port}` }, port);
  const proc = Object.assign(gw, { pid: gw.child.pid!, dataDir });
  all.push(proc);
  return proc;
}

/** The error lines the gateway processes logged (what to read when a request answered 5xx). */
function errorLines(): string[] {
  return all.flatMap((proc) =>
    proc.output
      .join('')
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line))
      .map((line) => `${proc.pid}: ${line.slice(0, 2000)}`),
  );
}

/** The node id embeds the pid (`<host>-<pid>-<hex>`). */
function pidOf(owner: string): number {
  return Number(owner.split('-').at(-2));
}

const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** Live lease holders: instance id -> { pid, epoch } (expired or released leases are absent). */
async function leases(): Promise<Map<string, { pid: number; epoch: number }>> {
  const { rows } = await db.query<{ instance_id: string; owner: string; epoch: string }>(
    `select instance_id, owner, epoch from "${schema}".instance_leases where owner is not null and expires_at > ${NOW}`,
  );
  return new Map(rows.map((row) => [row.instance_id, { pid: pidOf(row.owner), epoch: Number(row.epoch) }]));
}

async function statuses(ids: string[]): Promise<Map<string, { status: string; updatedAt: number }>> {
  const { rows } = await db.query<{ id: string; status: string; updated_at: string }>(
    `select id, status, updated_at from "${schema}".instances where id = any($1::text[])`,
    [ids],
  );
  return new Map(rows.map((row) => [row.id, { status: row.status, updatedAt: Number(row.updated_at) }]));
}

let setupRetries = 0;

/**
 * connectedInstance (test/support/gateway.ts) with a client's retries: a 503 (the instance moving
 * between processes, documented as retryable) is retried, connect and scan again (a move drops the
 * QR shown by the previous owner).
 */
async function linkedInstance(target: ApiTarget): Promise<TestInstance> {
  const instance = await createInstance(target, { webhookUrl: receiver.url, webhookEvents: ['MESSAGE', 'SEND_MESSAGE'] });
  const number = uniqueNumber();
  for (let attempt = 0; attempt < 20; attempt += 1) {
    const connect = await target.api('POST', '/api/v1/instance/connect', { key: instance.token });
    if (connect.status === 200) {
      const scan = await target.api('POST', '/api/v1/sandbox/scan', { key: ADMIN_KEY, body: { instanceId: instance.id, number } });
      if (scan.status === 200) return { ...instance, number };
      if (scan.status !== 503 && scan.status !== 409) throw new Error(`scan failed: ${scan.status} ${JSON.stringify(scan.body)}`);
    } else if (connect.status !== 503) throw new Error(`connect failed: ${connect.status} ${JSON.stringify(connect.body)}`);
    setupRetries += 1;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`could not link ${instance.id}`);
}

async function pool<T>(items: T[], parallel: number, run: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < items.length) {
        const index = next++;
        await run(items[index]!, index);
      }
    }),
  );
}

const sendEvents = (keyId: string) => receiver.requests.filter((r) => r.json?.event === 'SEND_MESSAGE' && r.json?.data?.key?.id === keyId);

/**
 * Sends from random instances through the processes `targets()` names, as a client would: a
 * connection error or a 503 is retried (through another process) and not counted; a 2xx is
 * accepted (its key id recorded); a 502 forward_failed is an unknown outcome (counted, bounded);
 * anything else is kept as unexpected.
 */
/** Client workers sending at once. */
const WORKERS = 6;

class Load {
  readonly accepted = new Map<string, { instanceId: string; at: number }>();
  readonly unexpected: string[] = [];
  /** Answered 502 forward_failed: the owner died holding the request (outcome unknown, not accepted). */
  unknown = 0;
  retries = 0;
  inProgress = 0;
  private running = true;
  private readonly workers: Promise<void>[] = [];

  constructor(
    private readonly from: TestInstance[],
    private readonly targets: () => Proc[],
    parallel: number,
  ) {
    for (let i = 0; i < parallel; i += 1) this.workers.push(this.work(i));
  }

  private async work(worker: number): Promise<void> {
    let round = worker;
    while (this.running) {
      round += 1;
      const instance = this.from[Math.floor(Math.random() * this.from.length)]!;
      await this.send(instance, round);
    }
  }

  private async send(instance: TestInstance, round: number): Promise<void> {
    const body = JSON.stringify({ number: uniqueNumber(), text: `load ${round}` });
    const deadline = Date.now() + 30_000;
    this.inProgress += 1;
    try {
      for (let attempt = 0; Date.now() < deadline; attempt += 1) {
        const targets = this.targets();
        const target = targets[(round + attempt) % targets.length]!;
        let status: number;
        let text: string;
        try {
          const response = await fetch(`${target.url}/api/v1/send/text`, {
            method: 'POST',
            headers: { apikey: instance.token, 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(20_000),
          });
          status = response.status;
          text = await response.text();
        } catch {
          this.retries += 1;
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        if (status === 503) {
          this.retries += 1;
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        // 502 forward_failed: the owner took the request and died before answering; its outcome is
        // unknown, so it is not an accepted send (a client checks before repeating; this one moves on).
        if (status === 502 && text.includes('forward_failed')) {
          this.unknown += 1;
          return;
        }
        if (status >= 200 && status < 300) {
          this.accepted.set(JSON.parse(text).key.id as string, { instanceId: instance.id, at: Date.now() });
        } else {
          this.unexpected.push(`${status} ${text}`);
        }
        return;
      }
      this.unexpected.push(`gave up after 30 s (${instance.id})`);
    } finally {
      this.inProgress -= 1;
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  /** Accepted sends whose SEND_MESSAGE event has not reached the receiver. */
  undelivered(): string[] {
    const seen = new Set(receiver.events('SEND_MESSAGE').map((e) => e.data?.key?.id as string));
    return [...this.accepted.keys()].filter((id) => !seen.has(id));
  }
}

/** Duplicate deliveries of SEND_MESSAGE events: by eventId and by message key id. */
function duplicates(): { byEventId: number; byKeyId: number } {
  const events = receiver.events('SEND_MESSAGE');
  const eventIds = new Set(events.map((e) => e.eventId as string));
  const keyIds = new Set(events.map((e) => e.data?.key?.id as string));
  return { byEventId: events.length - eventIds.size, byKeyId: events.length - keyIds.size };
}

async function waitDelivered(load: Load, what: string): Promise<void> {
  await waitFor(() => (load.undelivered().length === 0 ? true : undefined), 30_000, `${what}: every accepted send delivered`).catch(
    (error: Error) => {
      throw new Error(`${error.message} (${load.undelivered().length} of ${load.accepted.size} missing)`);
    },
  );
}

/** Every instance leased by one of `live`; answers the leases. */
async function allLeasedBy(live: Proc[], timeoutMs: number, what: string): Promise<Map<string, { pid: number; epoch: number }>> {
  const pids = new Set(live.map((p) => p.pid));
  return waitFor(
    async () => {
      const map = await leases();
      return instances.every((i) => pids.has(map.get(i.id)?.pid ?? -1)) ? map : undefined;
    },
    timeoutMs,
    what,
  );
}

/**
 * Every instance leased by `live`, and no lease changed (owner or epoch) for four ticks: the
 * processes are done balancing, so none hands an instance over on its own meanwhile.
 */
async function steadyLeases(live: Proc[], timeoutMs: number, what: string): Promise<Map<string, { pid: number; epoch: number }>> {
  const pids = new Set(live.map((p) => p.pid));
  let last = '';
  let since = Date.now();
  return waitFor(
    async () => {
      const map = await leases();
      if (!instances.every((i) => pids.has(map.get(i.id)?.pid ?? -1))) return undefined;
      const shape = JSON.stringify(instances.map((i) => map.get(i.id)));
      if (shape !== last) {
        last = shape;
        since = Date.now();
        return undefined;
      }
      return Date.now() - since >= 4 * TICK_MS ? map : undefined;
    },
    timeoutMs,
    what,
  );
}

async function beats(): Promise<Map<number, number>> {
  const { rows } = await db.query<{ node_id: string; heartbeat_at: string }>(`select node_id, heartbeat_at from "${schema}".cluster_nodes`);
  return new Map(rows.map((row) => [pidOf(row.node_id), Number(row.heartbeat_at)]));
}

/** Every process of `live` announced, and each has ticked twice since (so each knows every other). */
async function settled(live: Proc[]): Promise<void> {
  const seen = await waitFor(
    async () => {
      const map = await beats();
      return live.every((p) => map.has(p.pid)) ? map : undefined;
    },
    20_000,
    'every process announced',
  );
  const since = Math.max(...seen.values());
  await waitFor(
    async () => {
      const map = await beats();
      return live.every((p) => (map.get(p.pid) ?? 0) > since + 500) ? true : undefined;
    },
    20_000,
    'every process ticking with all the others known',
  );
}

function countByPid(map: Map<string, { pid: number }>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const i of instances) {
    const pid = map.get(i.id)?.pid;
    if (pid !== undefined) counts.set(pid, (counts.get(pid) ?? 0) + 1);
  }
  return counts;
}

describe('cluster mode with real processes on PostgreSQL and Redis', () => {
  beforeAll(async () => {
    db = new pg.Pool({ connectionString: PG_URL, max: 3 });
    await receiver.start();
    // The first one creates the schema; the others join it.
    procs.push(await startProcess());
    procs.push(await startProcess());
    procs.push(await startProcess());
    await settled(procs);
  }, 240_000);

  afterAll(async () => {
    for (const proc of all) {
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill('SIGCONT');
        await proc.kill('SIGKILL');
      }
      fs.rmSync(proc.dataDir, { recursive: true, force: true });
    }
    await receiver.stop();
    await db?.end();
    await dropSchema(PG_URL, schema);
  }, 30_000);

  it('spreads 300 instances over the three processes and sends through every one', { timeout: 90_000 }, async () => {
    const started = Date.now();
    const created: TestInstance[] = new Array(INSTANCES);
    await pool([...Array(INSTANCES).keys()], 12, async (i) => {
      const target = { api: httpApi(procs[i % 3]!.url), adminKey: ADMIN_KEY };
      created[i] = await linkedInstance(target);
    });
    instances = created;
    const createdMs = Date.now() - started;

    const map = await allLeasedBy(procs, 20_000, 'every instance leased');
    const counts = countByPid(map);
    console.log(
      `[cluster-process] ${INSTANCES} instances created in ${createdMs} ms (${setupRetries} connect/scan retried after a 503); leases per process:`,
      Object.fromEntries(counts),
    );
    expect([...counts.keys()].sort()).toEqual(procs.map((p) => p.pid).sort());
    // A fair share: rendezvous hashing gives each about a third.
    for (const n of counts.values()) expect(n).toBeGreaterThanOrEqual(INSTANCES / 3 / 2);

    // One send per instance, through every process in turn (most are forwarded to the owner).
    const sent = new Map<string, number>();
    await pool(instances, 8, async (instance, i) => {
      const res = await httpApi(procs[i % 3]!.url)('POST', '/api/v1/send/text', {
        key: instance.token,
        body: { number: uniqueNumber(), text: `spread ${i}` },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      sent.set(res.body.key.id, i);
    });
    await waitFor(() => ([...sent.keys()].every((id) => sendEvents(id).length > 0) ? true : undefined), 30_000, 'every send delivered');
    for (const id of sent.keys()) expect(sendEvents(id)).toHaveLength(1);
  });

  it('re-homes a killed process within 10 s and delivers every accepted send', { timeout: 90_000 }, async () => {
    // Balanced first: an instance the paused process handed over by itself just before the pause
    // would be counted as taken from it, and it never logs losing that one.
    const before = await steadyLeases(procs, 30_000, 'every instance leased, and no lease moving');
    const victim = procs[1]!;
    const survivors = procs.filter((p) => p !== victim);
    const orphaned = instances.filter((i) => before.get(i.id)!.pid === victim.pid).map((i) => i.id);
    expect(orphaned.length).toBeGreaterThan(0);

    const load = new Load(instances, () => survivors, WORKERS);
    await waitFor(() => (load.accepted.size >= 30 ? true : undefined), 20_000, 'the load running');

    const inFlightAtKill = load.inProgress + load.undelivered().length;
    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    procs = survivors;

    // Re-homed: every orphan leased by a survivor and CONNECTED again, written after the kill.
    await waitFor(
      async () => {
        const map = await leases();
        if (!orphaned.every((id) => survivors.some((p) => p.pid === map.get(id)?.pid))) return undefined;
        const rows = await statuses(orphaned);
        return orphaned.every((id) => rows.get(id)?.status === 'CONNECTED') ? true : undefined;
      },
      20_000,
      'the killed process instances connected elsewhere',
    );
    const rehomeMs = Date.now() - killedAt;

    // The orphans send again through the survivors.
    const afterKill = load.accepted.size;
    await waitFor(() => (load.accepted.size >= afterKill + 30 ? true : undefined), 20_000, 'sends after the re-homing');
    await load.stop();
    await waitDelivered(load, 'after the kill');
    const dup = duplicates();
    console.log(
      `[cluster-process] kill -9: ${orphaned.length} instances re-homed in ${rehomeMs} ms; accepted ${load.accepted.size}, retried ${load.retries}, ` +
        `in flight at the kill ${inFlightAtKill}, duplicates by eventId ${dup.byEventId}, by key id ${dup.byKeyId}, outcome unknown (502) ${load.unknown}, unexpected ${load.unexpected.length}`,
    );
    if (load.unexpected.length > 0) console.log(`[cluster-process] errors logged:\n${errorLines().join('\n')}`);
    expect(load.unexpected).toEqual([]);
    // Only requests that reached the dead process around its death end with an unknown outcome: at
    // most two per client worker (the one in flight at the kill, one sent on a pooled connection
    // before the survivors saw it gone).
    expect(load.unknown).toBeLessThanOrEqual(2 * WORKERS);
    expect(rehomeMs).toBeLessThan(10_000);
    expect(dup.byKeyId).toBeLessThanOrEqual(inFlightAtKill);
    expect(dup.byEventId).toBeLessThanOrEqual(inFlightAtKill);
  });

  // A stopping process hands its instances over before it stops listening (gateway.close), so a
  // send for one of them waits for the hand-over and goes to the next owner.
  it('loses nothing in a rolling restart of all three processes', { timeout: 240_000 }, async () => {
    // After the kill two of the three processes run: the killed one is replaced first (under load),
    // then each of the two others is stopped with SIGTERM and replaced, one after the other.
    const load = new Load(instances, () => procs, WORKERS);
    const timings: number[] = [];
    for (const old of [undefined, ...procs]) {
      const began = Date.now();
      if (old) {
        procs = procs.filter((p) => p !== old);
        await old.kill('SIGTERM');
        expect(old.child.exitCode).toBe(0);
      }
      const fresh = await startProcess();
      procs = [...procs, fresh];
      await waitFor(
        async () => (countByPid(await leases()).get(fresh.pid) ?? 0) > 0 || undefined,
        20_000,
        'the new process holding instances',
      );
      timings.push(Date.now() - began);
    }
    await allLeasedBy(procs, 20_000, 'every instance leased after the restart');
    const afterRestart = load.accepted.size;
    await waitFor(() => (load.accepted.size >= afterRestart + 20 ? true : undefined), 20_000, 'sends after the restart');
    await load.stop();
    await waitDelivered(load, 'after the rolling restart');
    const rows = await statuses(instances.map((i) => i.id));
    expect(instances.filter((i) => rows.get(i.id)?.status !== 'CONNECTED')).toEqual([]);
    const dup = duplicates();
    console.log(
      `[cluster-process] rolling restart: steps ${timings.join(', ')} ms; accepted ${load.accepted.size}, retried ${load.retries}, ` +
        `duplicates (whole file) by eventId ${dup.byEventId}, by key id ${dup.byKeyId}`,
    );
    if (load.unexpected.length > 0) console.log(`[cluster-process] errors logged:\n${errorLines().join('\n')}`);
    expect(load.unexpected.slice(0, 5)).toEqual([]);
  });

  it('a paused owner neither acts nor writes for the instances taken from it', { timeout: 90_000 }, async () => {
    // Balanced first: an instance the paused process handed over by itself just before the pause
    // would be counted as taken from it, and it never logs losing that one.
    const before = await steadyLeases(procs, 30_000, 'every instance leased, and no lease moving');
    const paused = procs[0]!;
    const others = procs.filter((p) => p !== paused);
    const moved = instances.filter((i) => before.get(i.id)!.pid === paused.pid);
    expect(moved.length).toBeGreaterThan(0);
    const target = moved[0]!;

    paused.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    // Requests queued to the paused process (one per moved instance): the kernel accepts the
    // connections, nobody reads them yet. Several, so that some reach the route before the resumed
    // process's first tick finds its leases gone (only the local validity deadline stops those).
    const queuedText = `queued ${randomBytes(4).toString('hex')}`;
    const queuedAll = moved.slice(0, 20).map((instance) =>
      fetch(`${paused.url}/api/v1/send/text`, {
        method: 'POST',
        headers: { apikey: instance.token, 'content-type': 'application/json' },
        body: JSON.stringify({ number: uniqueNumber(), text: queuedText }),
        signal: AbortSignal.timeout(60_000),
      }).then(
        async (response) => ({ status: response.status, body: (await response.json()) as any }),
        (error: unknown) => ({ status: -1, body: String(error) as any }),
      ),
    );

    // Its instances move to the others (each lease's epoch grows) and connect there.
    const after = await allLeasedBy(others, 20_000, 'the paused process instances taken over');
    for (const i of moved) expect(after.get(i.id)!.epoch).toBeGreaterThan(before.get(i.id)!.epoch);
    await waitFor(
      async () => {
        const rows = await statuses(moved.map((i) => i.id));
        return moved.every((i) => rows.get(i.id)?.status === 'CONNECTED') ? true : undefined;
      },
      20_000,
      'the moved instances connected on the new owners',
    );
    // The new owner sends for the target instance.
    const fresh = await httpApi(others[0]!.url)('POST', '/api/v1/send/text', {
      key: target.token,
      body: { number: uniqueNumber(), text: 'from the new owner' },
    });
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
    // Paused for twice the lease in all.
    await waitFor(() => (Date.now() - stoppedAt >= 2 * LEASE_MS ? true : undefined), 3 * LEASE_MS, 'two lease times');
    const snapshot = await statuses(moved.map((i) => i.id));
    const leasesBefore = await leases();

    const { rows: beats } = await db.query<{ heartbeat_at: string }>(
      `select heartbeat_at from "${schema}".cluster_nodes where node_id like $1`,
      [`%-${paused.pid}-%`],
    );
    const lastBeat = Number(beats[0]?.heartbeat_at ?? 0);
    const outputAtResume = paused.output.length;
    paused.child.kill('SIGCONT');

    // The queued request is forwarded to the new owner or refused with 503 instance_moving; never run on the stale session.
    const replies = await Promise.all(queuedAll);
    for (const reply of replies) {
      if (reply.status === 503) expect(reply.body.code).toBe('instance_moving');
      else expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    }
    const reply = replies[0]!;
    const answered = replies.filter((r) => r.status === 200).map((r) => r.body.key.id as string);

    // The resumed process runs two ticks (it finds its leases gone and closes those sessions).
    const beatsAfter = async () =>
      Number(
        (await db.query(`select heartbeat_at from "${schema}".cluster_nodes where node_id like $1`, [`%-${paused.pid}-%`])).rows[0]
          ?.heartbeat_at ?? 0,
      );
    const firstBeat = await waitFor(
      async () => ((await beatsAfter()) > lastBeat ? beatsAfter() : undefined),
      10_000,
      'a tick after SIGCONT',
    );
    await waitFor(async () => ((await beatsAfter()) > firstBeat ? true : undefined), 10_000, 'a second tick after SIGCONT');
    const notDropped = () => {
      const lost = paused.output
        .slice(outputAtResume)
        .join('')
        .split('\n')
        .filter((line) => line.includes('lost the lease of an instance'));
      return moved.filter((i) => !lost.some((line) => line.includes(i.id))).map((i) => i.id);
    };
    await waitFor(
      () => (notDropped().length === 0 ? true : undefined),
      10_000,
      'the resumed process dropping every instance it lost',
    ).catch((error: Error) => {
      throw new Error(`${error.message}: not dropped ${JSON.stringify(notDropped())} of ${moved.length}`);
    });

    // It wrote nothing for them: statuses as the new owners left them, leases untouched.
    const now = await statuses(moved.map((i) => i.id));
    for (const i of moved) expect(now.get(i.id), i.id).toEqual(snapshot.get(i.id));
    const leasesNow = await leases();
    // (Once it ticks again it is a member again and may get some back: only through a new lease, a higher epoch.)
    for (const i of moved) {
      const lease = leasesNow.get(i.id);
      if (lease?.pid === paused.pid) expect(lease.epoch).toBeGreaterThan(leasesBefore.get(i.id)!.epoch);
      if (lease) expect(lease.epoch).toBeGreaterThanOrEqual(leasesBefore.get(i.id)!.epoch);
    }
    // Every SEND_MESSAGE of the target instance is one a send accepted by the new owner produced.
    const expected = new Set([fresh.body.key.id as string, ...answered]);
    await waitFor(() => ([...expected].every((id) => sendEvents(id).length > 0) ? true : undefined), 15_000, 'the sends delivered');
    const texts = receiver
      .events('SEND_MESSAGE')
      .filter((e) => e.instanceId === target.id && JSON.stringify(e.data).includes(queuedText))
      .map((e) => e.data.key.id as string);
    expect(texts).toEqual(reply.status === 200 ? [reply.body.key.id] : []);
    console.log(
      `[cluster-process] SIGSTOP: ${moved.length} instances moved; ${replies.length} queued requests answered after SIGCONT: ${replies.map((r) => r.status).join(',')}`,
    );
  });
});
