// Cluster mode (src/cluster/): BENCH_CLUSTER_INSTANCES (3,000) sandbox instances over 1, 2 and 3
// gateway processes on one PostgreSQL schema and one Redis prefix (fresh per configuration). For
// each: the time to create and link them all (bounded concurrency, requests spread over the
// processes), send throughput with every instance's token on every process's port (so most requests
// are forwarded when N > 1), webhook events/s during that load, RSS per process and per instance held,
// and for N > 1 the time to re-home the instances of a process killed with SIGKILL. The baseline is
// the N = 1 configuration of the same run.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { WebhookReceiverForBench } from './receiver.mjs';
import { ADMIN, api, benchNumber, emit, rssOf, sleep, startGateway, tempDir, tokenLoad } from './lib.mjs';

const QUICK = process.env.BENCH_QUICK === '1';
const INSTANCES = Number(process.env.BENCH_CLUSTER_INSTANCES ?? (QUICK ? 300 : 3000));
const SIZES = (process.env.BENCH_CLUSTER_SIZES ?? '1,2,3').split(',').map(Number);
const LOAD_SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? (QUICK ? 4 : 10));
/** Requests in flight while linking the instances (each instance: create, connect, scan). */
const LINK_CONCURRENCY = Number(process.env.BENCH_CLUSTER_LINK_CONCURRENCY ?? 32);
const CONNECTIONS = 64;
/** BENCH_CLUSTER_WEBHOOK=0: no webhook on the instances (the send figures without deliveries). */
const WEBHOOK = process.env.BENCH_CLUSTER_WEBHOOK !== '0';
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = 'redis://127.0.0.1:6379';
/** Optional CLUSTER_LEASE_MS / CLUSTER_TICK_MS for the gateways (their defaults otherwise: 6 s, lease/4). */
const LEASE_ENV = Object.fromEntries(
  [
    ['CLUSTER_LEASE_MS', process.env.BENCH_CLUSTER_LEASE_MS],
    ['CLUSTER_TICK_MS', process.env.BENCH_CLUSTER_TICK_MS],
  ].filter(([, v]) => v),
);
const LEASE_MS = Number(LEASE_ENV.CLUSTER_LEASE_MS ?? 6000);
const TICK_MS = Number(LEASE_ENV.CLUSTER_TICK_MS ?? Math.max(250, Math.floor(LEASE_MS / 4)));
/** Where the sends go: a number no instance holds. */
const TO = '5511900000000';
const CLK_TCK = 100;

const ratio = (a, b) => (b ? Math.round((a / b) * 1000) / 1000 : null);
const round = (x, digits = 0) => (x === null || x === undefined ? null : Math.round(x * 10 ** digits) / 10 ** digits);
const portOf = (address) => Number(new URL(address).port);

/** CPU seconds a process used so far (user + system, /proc). */
function cpuOf(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Runs `task(i)` for i in 0..n-1 with at most `limit` at once. */
async function bounded(n, limit, task) {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next;
      next += 1;
      await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, worker));
}

async function waitUntil(check, timeoutMs, what, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`cluster bench: timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** One configuration: `n` processes. Returns its figures. */
async function configuration(n) {
  const schema = `bench_cluster_${Date.now()}_${n}`;
  const prefix = `wgbc${randomBytes(3).toString('hex')}:`;
  const env = {
    DATABASE_URL: PG_URL,
    DATABASE_SCHEMA: schema,
    KV_STORE_URL: REDIS_URL,
    KV_STORE_PREFIX: prefix,
    CLUSTER_SECRET: randomBytes(24).toString('base64url'),
    ...LEASE_ENV,
  };
  const db = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const q = async (text, params) => (await db.query(text.replaceAll('$schema', `"${schema}"`), params)).rows;
  const receiver = new WebhookReceiverForBench();
  await receiver.start();
  const gateways = [];
  const dataDirs = [];
  try {
    // One after the other (the first runs the migrations).
    for (let i = 0; i < n; i += 1) {
      const dataDir = tempDir('waygate-bench-cluster-');
      dataDirs.push(dataDir);
      gateways.push(await startGateway({ ...env, DATA_DIR: dataDir }));
    }
    const ports = gateways.map((gw) => gw.port);
    // Every process announced, and each has run a tick since the last one joined (it places by all of them).
    await waitUntil(
      async () => {
        const rows = await q(`select heartbeat_at, started_at from $schema.cluster_nodes`);
        if (rows.length !== n) return false;
        const lastJoined = Math.max(...rows.map((r) => Number(r.started_at)));
        return rows.every((r) => Number(r.heartbeat_at) > lastJoined + TICK_MS);
      },
      30_000,
      `${n} nodes announced`,
    );
    await sleep(200);
    const emptyRss = gateways.map((gw) => rssOf(gw.child.pid));

    // Link every instance: create (admin key), connect (its token), scan (admin key), each step on
    // the next process so the requests are forwarded as clients' would be.
    const instances = new Array(INSTANCES);
    // A 503 (instance moving between processes) is answered again after a moment, and counted.
    let linkRetries = 0;
    const call = async (url, method, route, key, body) => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await api(url, method, route, key, body);
        } catch (error) {
          if (attempt >= 5 || !String(error.message).includes('-> 503')) throw error;
          linkRetries += 1;
          await sleep(250 * attempt);
        }
      }
    };
    const linkStarted = performance.now();
    await bounded(INSTANCES, LINK_CONCURRENCY, async (i) => {
      const url = (k) => gateways[(i + k) % n].url;
      const created = await call(url(0), 'POST', '/api/v1/instance/create', ADMIN, {
        instanceName: `c${i}-${randomBytes(3).toString('hex')}`,
        network: 'sandbox',
        ...(WEBHOOK ? { webhookUrl: receiver.url, webhookEvents: ['SEND_MESSAGE'] } : {}),
      });
      await call(url(1), 'POST', '/api/v1/instance/connect', created.token);
      const number = benchNumber();
      await call(url(2), 'POST', '/api/v1/sandbox/scan', ADMIN, { instanceId: created.instanceId, number });
      instances[i] = { id: created.instanceId, token: created.token };
    });
    const linkMs = performance.now() - linkStarted;

    // Every instance leased by a live process and connected.
    const leaseRows = async () =>
      q(
        `select l.instance_id, l.owner, l.epoch, n.address, i.status
         from $schema.instances i
         join $schema.instance_leases l on l.instance_id = i.id
         join $schema.cluster_nodes n on n.node_id = l.owner
         where l.expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint
           and n.heartbeat_at > (extract(epoch from clock_timestamp()) * 1000)::bigint - $1`,
        [LEASE_MS],
      );
    const leased = await waitUntil(
      async () => {
        const rows = await leaseRows();
        return rows.length === INSTANCES && rows.every((r) => r.status === 'CONNECTED') ? rows : undefined;
      },
      60_000,
      'every instance leased and connected',
      200,
    );
    const ownerPort = new Map(leased.map((r) => [r.instance_id, portOf(r.address)]));
    const held = ports.map((port) => leased.filter((r) => portOf(r.address) === port).length);
    const linkedRss = gateways.map((gw) => rssOf(gw.child.pid));

    // Send load over every token and every port.
    const cpuBefore = gateways.map((gw) => cpuOf(gw.child.pid));
    const eventsBefore = receiver.uniqueIds.size;
    const loadStarted = performance.now();
    const load = await tokenLoad({
      ports,
      instances: instances.map((inst) => ({ token: inst.token, port: ownerPort.get(inst.id) })),
      connections: CONNECTIONS,
      duration: LOAD_SECONDS,
      number: TO,
    });
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const eventsDuringLoad = receiver.uniqueIds.size - eventsBefore;
    const cpuSeconds = gateways.map((gw, i) => cpuOf(gw.child.pid) - cpuBefore[i]);

    // Drain: until the receiver has every send's event or stops growing for 3 s (30 s at most).
    const eventsAfterDrain = WEBHOOK ? await receiver.drain(eventsBefore, load.total2xx) : receiver.uniqueIds.size - eventsBefore;

    // Per process: requests that arrived at its port (served here or forwarded), and those it served.
    const perProcess = gateways.map((gw, i) => {
      const run = load.perPort.find((r) => r.port === gw.port);
      const arrived = run.requestsPerSec;
      const forwardedOut = arrived * run.forwardedShare;
      const forwardedIn = load.perPort
        .filter((r) => r.port !== gw.port)
        .reduce((sum, r) => sum + r.requestsPerSec * (r.ownerShare[gw.port] ?? 0), 0);
      return {
        process: i + 1,
        instancesHeld: held[i],
        rssEmptyBytes: emptyRss[i],
        rssLinkedBytes: linkedRss[i],
        rssPerInstanceBytes: held[i] ? Math.round((linkedRss[i] - emptyRss[i]) / held[i]) : null,
        requestsPerSecArrived: arrived,
        requestsPerSecForwardedOut: Math.round(forwardedOut),
        requestsPerSecServedLocal: Math.round(arrived - forwardedOut),
        requestsPerSecServedForOthers: Math.round(forwardedIn),
        p50Ms: run.p50Ms,
        p99Ms: run.p99Ms,
        errors: run.errors,
        cpuSecondsPerSecOfLoad: round(cpuSeconds[i] / loadSeconds, 2),
      };
    });

    // Re-homing: SIGKILL one process (not the leader) and measure until every instance is leased by
    // a live process at a new epoch (database) and answers CONNECTED through the API.
    let rehome;
    if (n > 1) {
      const nodes = await q(`select node_id, address, leader from $schema.cluster_nodes`);
      const victimNode = nodes.find((node) => !node.leader) ?? nodes[0];
      const victim = gateways.find((gw) => gw.port === portOf(victimNode.address));
      const live = gateways.filter((gw) => gw !== victim);
      const before = await q(`select instance_id, epoch from $schema.instance_leases where owner = $1`, [victimNode.node_id]);
      const moved = new Map(before.map((r) => [r.instance_id, Number(r.epoch)]));
      const tokens = new Map(instances.map((inst) => [inst.id, inst.token]));
      const killedAt = performance.now();
      victim.child.kill('SIGKILL');
      const leasedPromise = waitUntil(
        async () => {
          const rows = await leaseRows();
          const fresh = rows.filter(
            (r) => moved.has(r.instance_id) && Number(r.epoch) > moved.get(r.instance_id) && r.status === 'CONNECTED',
          );
          return fresh.length === moved.size ? performance.now() - killedAt : undefined;
        },
        120_000,
        'the killed process instances leased again',
      );
      // Every moved instance asked for its status (instance token, a live process's port) until it
      // answers CONNECTED; requests to an instance being resumed wait for it.
      let apiErrors = 0;
      const ids = [...moved.keys()];
      const connectedPromise = (async () => {
        let latest = 0;
        await bounded(ids.length, 32, async (k) => {
          const url = live[k % live.length].url;
          for (;;) {
            const status = await api(url, 'GET', '/api/v1/instance/status', tokens.get(ids[k])).then(
              (body) => body?.status,
              () => {
                apiErrors += 1;
                return undefined;
              },
            );
            if (status === 'CONNECTED') break;
            if (performance.now() - killedAt > 120_000) throw new Error('cluster bench: re-homed instance never answered CONNECTED');
            await sleep(100);
          }
          latest = Math.max(latest, performance.now() - killedAt);
        });
        return latest;
      })();
      const [leasedMs, connectedMs] = await Promise.all([leasedPromise, connectedPromise]);
      const after = await q(`select owner, count(*)::int as n from $schema.instance_leases group by owner`);
      rehome = {
        killed: `process ${gateways.indexOf(victim) + 1} (SIGKILL, not the leader)`,
        instancesMoved: moved.size,
        leaseMs: LEASE_MS,
        tickMs: TICK_MS,
        leasedAgainMs: Math.round(leasedMs),
        connectedViaApiMs: Math.round(connectedMs),
        statusRequestsRefusedMeanwhile: apiErrors,
        heldAfter: after.map((r) => r.n).sort((a, b) => b - a),
      };
    }

    return {
      processes: n,
      instances: INSTANCES,
      link: {
        ms: Math.round(linkMs),
        instancesPerSec: Math.round(INSTANCES / (linkMs / 1000)),
        concurrency: LINK_CONCURRENCY,
        retriesAfter503: linkRetries,
      },
      send: {
        seconds: LOAD_SECONDS,
        connections: CONNECTIONS,
        requestsPerSec: load.requestsPerSec,
        p50Ms: load.p50Ms,
        p99Ms: load.p99Ms,
        errors: load.errors,
        total2xx: load.total2xx,
        forwardedShare: round(load.forwardedShare, 3),
      },
      webhook: {
        attached: WEBHOOK,
        eventsPerSecDuringLoad: Math.round(eventsDuringLoad / loadSeconds),
        deliveredDuringLoad: eventsDuringLoad,
        deliveredAfterDrain: eventsAfterDrain,
        notYetDelivered: WEBHOOK ? Math.max(0, load.total2xx - eventsAfterDrain) : null,
        seqGaps: receiver.seqGaps,
        outOfOrder: receiver.outOfOrder,
      },
      memory: {
        rssPerProcessBytes: linkedRss,
        rssTotalBytes: linkedRss.reduce((a, b) => a + b, 0),
        rssPerInstanceBytes: Math.round((linkedRss.reduce((a, b) => a + b, 0) - emptyRss.reduce((a, b) => a + b, 0)) / INSTANCES),
      },
      perProcess,
      ...(rehome ? { rehome } : {}),
    };
  } finally {
    // Teardown only: the schema is dropped, so no process needs to hand anything over.
    for (const gw of gateways) if (gw.child.exitCode === null) gw.child.kill('SIGKILL');
    await Promise.all(gateways.map((gw) => gw.stop()));
    await receiver.stop();
    await db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await db.end();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
    const redis = new Redis(REDIS_URL);
    try {
      let cursor = '0';
      do {
        const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = nextCursor;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
  }
}

/** The cluster figure: every configuration of SIZES, ratios against N = 1 of the same run. */
export async function clusterBench(results) {
  const configs = [];
  for (const n of SIZES) {
    console.error(`cluster: ${n} process(es), ${INSTANCES} instances...`);
    configs.push(await configuration(n));
  }
  const base = configs.find((c) => c.processes === 1);
  const figure = {
    figure: 'cluster',
    unit: 'sandbox instances over N gateway processes (one PostgreSQL, one Redis)',
    instances: INSTANCES,
    configurations: configs,
    ...(base
      ? {
          baseline: { name: 'N = 1 (same run)', linkMs: base.link.ms, requestsPerSec: base.send.requestsPerSec },
          ratios: Object.fromEntries(
            configs
              .filter((c) => c !== base)
              .map((c) => [
                `n${c.processes}_over_n1`,
                {
                  requestsPerSec: ratio(c.send.requestsPerSec, base.send.requestsPerSec),
                  linkTime: ratio(c.link.ms, base.link.ms),
                  webhookEventsPerSec: ratio(c.webhook.eventsPerSecDuringLoad, base.webhook.eventsPerSecDuringLoad),
                  rssTotal: ratio(c.memory.rssTotalBytes, base.memory.rssTotalBytes),
                },
              ]),
          ),
        }
      : {}),
  };
  emit(results, figure);
}
