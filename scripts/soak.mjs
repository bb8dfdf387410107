#!/usr/bin/env node
// Soak: a gateway child process under steady traffic for SOAK_MINUTES (default 60): sends from
// SOAK_INSTANCES sandbox instances (default 20) at SOAK_RATE per second in all (default 100), contacts
// messaging them at half that rate, every event delivered to a local webhook receiver. Every
// SOAK_SAMPLE_SECONDS (default 15) it reads RSS, heap and event-loop delay from /metrics. At the end it
// prints the samples, the RSS and heap slopes over the last half of the run (MB per hour, least
// squares) and the events lost, and writes them to .test-data/soak.json. Not part of the test command.
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
for (const [name, value] of Object.entries({ MINUTES, INSTANCES, RATE, SAMPLE_SECONDS })) {
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
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hook = `http://127.0.0.1:${receiver.address().port}/hook`;

const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
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
  stdio: ['ignore', 'inherit', 'inherit'],
});
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
    signal: AbortSignal.timeout(15_000),
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

const expected = new Set();
const counts = { sends: 0, incoming: 0, refused: 0, failed: 0 };
const started = Date.now();
const ends = started + MINUTES * 60_000;
const samples = [];
let tick = 0;
let inflight = 0;
const sampler = setInterval(() => {
  sample()
    .then((s) => {
      samples.push(s);
      console.log(JSON.stringify({ soak: 'sample', ...s, ...counts }));
    })
    .catch((error) => console.error(`sample failed: ${error.message}`));
}, SAMPLE_SECONDS * 1000);

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
}

// Drain: every acknowledged event must reach the receiver.
const drainUntil = Date.now() + 120_000;
while (Date.now() < drainUntil && [...expected].some((k) => !received.has(k))) await sleep(500);
clearInterval(sampler);
samples.push(await sample());
const lost = [...expected].filter((k) => !received.has(k)).length;

/** Least-squares slope of `field` over the samples of the last half, in MB per hour. */
function slope(field) {
  const half = samples.filter((s) => s.atSeconds >= (MINUTES * 60) / 2);
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
  rssSlopeLastHalfMbPerHour: slope('rssMb'),
  heapSlopeLastHalfMbPerHour: slope('heapMb'),
  loopDelayP99MaxMs: Math.max(...samples.map((s) => s.loopDelayP99Ms)),
};
fs.mkdirSync(path.join(root, '.test-data'), { recursive: true });
fs.writeFileSync(path.join(root, '.test-data', 'soak.json'), JSON.stringify({ summary, samples }, null, 2));
console.log(JSON.stringify({ soak: 'summary', ...summary }));
const exited = new Promise((resolve) => child.once('exit', resolve));
stopChild();
await exited;
receiver.close();
fs.rmSync(dataDir, { recursive: true, force: true });
process.exit(lost === 0 && counts.failed === 0 ? 0 : 1);
