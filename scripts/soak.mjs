#!/usr/bin/env node
// Soak: a gateway child process under steady traffic for SOAK_MINUTES (default 60): sends from
// SOAK_INSTANCES sandbox instances (default 20) at SOAK_RATE per second in all (default 100), contacts
// messaging them at half that rate, every event delivered to a local webhook receiver. Every
// SOAK_SAMPLE_SECONDS (default 15) it reads RSS, heap and event-loop delay from /metrics. At the end it
// prints the samples, the RSS and heap slopes over the last half of the run (MB per hour, least
// squares) and the events lost, and writes them to .test-data/soak.json. Not part of the test command.
//
// The gateway runs with scripts/soak-probe.mjs loaded (a soak-only IPC hook, not part of the gateway):
// every SOAK_GC_SAMPLE_SECONDS (default 60) the soak has it run a full GC and read process.memoryUsage(),
// so the summary also gives the live heap (what survives a GC, unlike /metrics' heap used, which
// swings by 100+ MB with the garbage), external memory and RSS after the GC, with their slopes.
// SOAK_HEAP_SNAPSHOTS=<folder>: a heap snapshot at the middle of the run (the start of the measured
// half) and one at the end (after the drain); compare them with
// `node --max-old-space-size=8192 scripts/heap-diff.mjs <folder>/middle.heapsnapshot <folder>/end.heapsnapshot`.
// A snapshot blocks the gateway for seconds and leaves its RSS hundreds of MB higher: a diagnosis run,
// not a figure run. SOAK_PORT and SOAK_HOOK_PORT pin the gateway's and the receiver's ports.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 60);
const INSTANCES = Number(process.env.SOAK_INSTANCES ?? 20);
const RATE = Number(process.env.SOAK_RATE ?? 100);
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 15);
const GC_SAMPLE_SECONDS = Number(process.env.SOAK_GC_SAMPLE_SECONDS ?? 60);
const SNAPSHOTS = process.env.SOAK_HEAP_SNAPSHOTS ? path.resolve(process.env.SOAK_HEAP_SNAPSHOTS) : null;
for (const [name, value] of Object.entries({ MINUTES, INSTANCES, RATE, SAMPLE_SECONDS, GC_SAMPLE_SECONDS })) {
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`SOAK_${name} must be a positive number`);
    process.exit(2);
  }
}

const root = new URL('..', import.meta.url).pathname;
const ADMIN = `soak-admin-${randomBytes(8).toString('hex')}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-soak-'));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The receiver: counts every event by its type and message id.
const received = new Map();
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const envelope of Array.isArray(body) ? body : [body]) {
        const key = `${envelope.event} ${envelope.data?.key?.id}`;
        received.set(key, (received.get(key) ?? 0) + 1);
      }
    } catch {
      // not an envelope
    }
    res.writeHead(200).end('ok');
  });
});
await new Promise((resolve) => receiver.listen(Number(process.env.SOAK_HOOK_PORT ?? 0), '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${receiver.address().port}/hook`;

const port = process.env.SOAK_PORT ? Number(process.env.SOAK_PORT) : await freePort();
const url = `http://127.0.0.1:${port}`;
if (SNAPSHOTS) fs.mkdirSync(SNAPSHOTS, { recursive: true });
const child = spawn(process.execPath, ['--expose-gc', '--import', './scripts/soak-probe.mjs', '--import', 'tsx', 'src/main.ts'], {
  cwd: root,
  env: {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    GLOBAL_API_KEY: ADMIN,
    RATE_LIMIT_PER_IP: '10000000',
    RATE_LIMIT_PER_KEY: '10000000',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
let probeId = 0;
/** Asks scripts/soak-probe.mjs in the gateway (see the top of this file) and waits for its answer. */
function probe(question) {
  const id = (probeId += 1);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      reject(new Error(`no answer to ${question.probe} within 120 s`));
    }, 120_000);
    const onMessage = (message) => {
      if (message?.id !== id) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve(message);
    };
    child.on('message', onMessage);
    child.send({ ...question, id });
  });
}
const stopChild = () => {
  if (child.exitCode === null) child.kill('SIGTERM');
};
process.on('SIGINT', () => {
  stopChild();
  process.exit(130);
});

async function call(method, route, body, key = ADMIN) {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: { apikey: key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    // A heap snapshot stops the gateway for seconds: requests then wait for it rather than fail.
    signal: AbortSignal.timeout(SNAPSHOTS ? 120_000 : 15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

for (let waited = 0; ; waited += 200) {
  if (child.exitCode !== null) throw new Error('the gateway exited while starting');
  if (waited > 60_000) throw new Error('the gateway did not start within 60 s');
  try {
    if ((await fetch(`${url}/api/v1/server/ok`)).ok) break;
  } catch {
    // not listening yet
  }
  await sleep(200);
}

const instances = [];
for (let i = 0; i < INSTANCES; i += 1) {
  const number = `5521${String(100_000_000 + i)}`;
  const created = await call('POST', '/api/v1/instance/create', {
    instanceName: `soak-${i}`,
    network: 'sandbox',
    webhookUrl: hook,
    webhookEvents: ['MESSAGE', 'SEND_MESSAGE'],
  });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
  const instance = { id: created.body.instanceId, token: created.body.token, number };
  await call('POST', '/api/v1/instance/connect', undefined, instance.token);
  const scanned = await call('POST', '/api/v1/sandbox/scan', { instanceId: instance.id, number });
  if (scanned.status !== 200) throw new Error(`scan: ${scanned.status} ${JSON.stringify(scanned.body)}`);
  instances.push(instance);
}

/** The live numbers of the process, from its own /metrics. */
async function sample() {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line ? Number(line.split(' ').at(-1)) : NaN;
  };
  return {
    atSeconds: Math.round((Date.now() - started) / 1000),
    rssMb: value('process_resident_memory_bytes') / 1_048_576,
    heapMb: value('nodejs_heap_size_used_bytes') / 1_048_576,
    loopDelayP99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000,
  };
}

/** Has the gateway write a heap snapshot into SOAK_HEAP_SNAPSHOTS and waits until it is written. */
async function heapSnapshot(label) {
  const asked = Date.now();
  const { file } = await probe({ probe: 'snapshot', file: path.join(SNAPSHOTS, `${label}.heapsnapshot`) });
  console.log(JSON.stringify({ soak: 'heap-snapshot', label, file, seconds: (Date.now() - asked) / 1000 }));
  return file;
}

/** The memory that survives a full GC, in MB. */
async function liveSample() {
  const m = await probe({ probe: 'memory' });
  return {
    atSeconds: Math.round((Date.now() - started) / 1000),
    liveHeapMb: m.heapUsed / 1_048_576,
    externalMb: m.external / 1_048_576,
    arrayBuffersMb: m.arrayBuffers / 1_048_576,
    rssAfterGcMb: m.rss / 1_048_576,
  };
}

const expected = new Set();
const counts = { sends: 0, incoming: 0, refused: 0, failed: 0 };
const started = Date.now();
const ends = started + MINUTES * 60_000;
const samples = [];
const liveSamples = [];
let tick = 0;
let inflight = 0;
let midSnapshot = null;
const sampler = setInterval(() => {
  sample()
    .then((s) => {
      samples.push(s);
      console.log(JSON.stringify({ soak: 'sample', ...s, ...counts }));
    })
    .catch((error) => console.error(`sample failed: ${error.message}`));
}, SAMPLE_SECONDS * 1000);
const gcSampler = setInterval(() => {
  liveSample()
    .then((s) => {
      liveSamples.push(s);
      console.log(JSON.stringify({ soak: 'live', ...s }));
    })
    .catch((error) => console.error(`live sample failed: ${error.message}`));
}, GC_SAMPLE_SECONDS * 1000);

// Steady load: every 100 ms a tenth of the per-second rate, spread over the instances.
while (Date.now() < ends) {
  const due = started + tick * 100;
  tick += 1;
  if (due > Date.now()) await sleep(due - Date.now());
  const jobs = [];
  const perTick = RATE / 10;
  const sends = Math.floor(perTick) + (Math.random() < perTick % 1 ? 1 : 0);
  for (let i = 0; i < sends; i += 1) {
    const from = instances[Math.floor(Math.random() * instances.length)];
    const to = instances[Math.floor(Math.random() * instances.length)];
    jobs.push(
      call('POST', '/api/v1/send/text', { number: to.number, text: `soak ${tick}` }, from.token).then(
        (res) => {
          if (res.status === 200) {
            counts.sends += 1;
            expected.add(`SEND_MESSAGE ${res.body.key.id}`);
          } else counts.refused += 1;
        },
        () => (counts.failed += 1),
      ),
    );
    if (i % 2 === 0) {
      jobs.push(
        call('POST', '/api/v1/sandbox/messages', { from: '5521999990000', to: to.number, text: `soak in ${tick}` }).then(
          (res) => {
            if (res.status === 200) {
              counts.incoming += 1;
              expected.add(`MESSAGE ${res.body.key.id}`);
            } else counts.refused += 1;
          },
          () => (counts.failed += 1),
        ),
      );
    }
  }
  // A tick does not wait for its answers (a slow answer must not lower the rate), but a backlog of
  // unanswered requests stops the load until it shrinks: the soak measures a steady state.
  inflight += jobs.length;
  void Promise.all(jobs).then(() => (inflight -= jobs.length));
  while (inflight > 2_000) await sleep(50);
  if (SNAPSHOTS && !midSnapshot && Date.now() >= started + MINUTES * 30_000) {
    // The load pauses while the gateway is blocked writing it (new connections would time out), then
    // goes on at its rate without catching up.
    midSnapshot = heapSnapshot('middle');
    await midSnapshot;
    tick = Math.ceil((Date.now() - started) / 100);
  }
}

// Drain: every acknowledged event must reach the receiver. The last ticks' answers come first: an
// answer that arrived after the drain began was counted lost (its event still on its way).
while (inflight > 0) await sleep(50);
const drainUntil = Date.now() + 120_000;
while (Date.now() < drainUntil && [...expected].some((k) => !received.has(k))) await sleep(500);
clearInterval(sampler);
clearInterval(gcSampler);
samples.push(await sample());
liveSamples.push(await liveSample());
const lostKeys = [...expected].filter((k) => !received.has(k));
const lost = lostKeys.length;
const snapshots = SNAPSHOTS ? [await midSnapshot, await heapSnapshot('end')] : undefined;

/** Least-squares slope of `field` over the samples (of `from`) of the last half, in MB per hour. */
function slope(field, from = samples) {
  const half = from.filter((s) => s.atSeconds >= (MINUTES * 60) / 2);
  if (half.length < 2) return NaN;
  const n = half.length;
  const mx = half.reduce((a, s) => a + s.atSeconds, 0) / n;
  const my = half.reduce((a, s) => a + s[field], 0) / n;
  const num = half.reduce((a, s) => a + (s.atSeconds - mx) * (s[field] - my), 0);
  const den = half.reduce((a, s) => a + (s.atSeconds - mx) ** 2, 0);
  return (num / den) * 3600;
}

const summary = {
  minutes: MINUTES,
  instances: INSTANCES,
  ratePerSecond: RATE,
  ...counts,
  acknowledgedEvents: expected.size,
  lost,
  rssFirstMb: samples[0]?.rssMb,
  rssLastMb: samples.at(-1)?.rssMb,
  heapFirstMb: samples[0]?.heapMb,
  heapLastMb: samples.at(-1)?.heapMb,
  rssSlopeLastHalfMbPerHour: slope('rssMb'),
  heapSlopeLastHalfMbPerHour: slope('heapMb'),
  // After a full GC (the probe): the first reading is at GC_SAMPLE_SECONDS, the last after the drain.
  liveHeapFirstMb: liveSamples[0]?.liveHeapMb,
  liveHeapLastMb: liveSamples.at(-1)?.liveHeapMb,
  liveHeapSlopeLastHalfMbPerHour: slope('liveHeapMb', liveSamples),
  externalSlopeLastHalfMbPerHour: slope('externalMb', liveSamples),
  rssAfterGcSlopeLastHalfMbPerHour: slope('rssAfterGcMb', liveSamples),
  ...(snapshots ? { snapshots } : {}),
  loopDelayP99MaxMs: Math.max(...samples.map((s) => s.loopDelayP99Ms)),
};
fs.mkdirSync(path.join(root, '.test-data'), { recursive: true });
fs.writeFileSync(path.join(root, '.test-data', 'soak.json'), JSON.stringify({ summary, samples, liveSamples }, null, 2));
console.log(JSON.stringify({ soak: 'summary', ...summary }));
const mb = (v) => (Number.isFinite(v) ? v.toFixed(0) : '?');
console.log(
  `soak: ${MINUTES} min, RSS ${mb(summary.rssFirstMb)} -> ${mb(summary.rssLastMb)} MB ` +
    `(last half ${mb(summary.rssSlopeLastHalfMbPerHour)} MB/h); live heap after GC ${mb(summary.liveHeapFirstMb)} -> ` +
    `${mb(summary.liveHeapLastMb)} MB (last half ${mb(summary.liveHeapSlopeLastHalfMbPerHour)} MB/h; heap used with garbage ` +
    `${mb(summary.heapSlopeLastHalfMbPerHour)} MB/h); external last half ${mb(summary.externalSlopeLastHalfMbPerHour)} MB/h; ` +
    `${lost} events lost`,
);
const exited = new Promise((resolve) => child.once('exit', resolve));
stopChild();
await exited;
receiver.close();
// Events lost: their keys, and the gateway's data (outbox, dead letters) kept to look into.
if (lost > 0) console.log(JSON.stringify({ soak: 'lost', keys: lostKeys.slice(0, 20), dataDir }));
else fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(lost === 0 && counts.failed === 0 ? 0 : 1);
