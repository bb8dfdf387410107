// Shared pieces of the benchmarks: child processes, HTTP calls, autocannon runs, memory readings.
import { execSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const ROOT = new URL('..', import.meta.url).pathname;
export const ADMIN = 'bench-admin-key-0123456789abcdef';

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts a node script as a child process and waits until `readyUrl` answers (or `readyLine` is printed). */
/**
 * BENCH_PIN_CORES=1: servers (the gateway, the bare route) run on core 0 and load generators on core
 * 1 (taskset), so a generator never takes the server's core. Without it they share both cores.
 */
const PIN_CORES = process.env.BENCH_PIN_CORES === '1';

/** Spawns `node args` on the server's core or the load generator's (BENCH_PIN_CORES). */
function spawnNode(role, args, options) {
  if (!PIN_CORES) return spawn(process.execPath, args, options);
  return spawn('taskset', ['-c', role === 'server' ? '0' : '1', process.execPath, ...args], options);
}

export async function startProcess(args, env, { readyUrl, readyLine, timeoutMs = 120_000 } = {}) {
  const started = performance.now();
  const child = spawnNode('server', args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let lineSeen = false;
  const onData = (d) => {
    output += d.toString();
    if (readyLine && output.includes(readyLine)) lineSeen = true;
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited early: ${output}`);
    if (Date.now() > deadline) throw new Error(`process not ready: ${output.slice(-2000)}`);
    if (
      readyLine
        ? lineSeen
        : await fetch(readyUrl).then(
            (r) => r.ok,
            () => false,
          )
    )
      break;
    await sleep(readyLine ? 10 : 50);
  }
  return {
    child,
    readyMs: performance.now() - started,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Where `--profile` runs keep their CPU profiles. */
export const PROFILE_DIR = path.join(ROOT, 'bench/results/profiles');

/**
 * Starts the built gateway (dist/main.js) on a free port. With `profile` (a name) it runs under
 * `--cpu-prof` and writes bench/results/profiles/<profile>.cpuprofile when it stops; `nodeArgs`
 * go to node before the script (a bench-only `--import`, say).
 */
export async function startGateway(env = {}, { readyLine, profile, nodeArgs = [] } = {}) {
  const port = await freePort();
  const dataDir = env.DATA_DIR ?? tempDir('waygate-bench-');
  const fullEnv = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    GLOBAL_API_KEY: ADMIN,
    LOG_LEVEL: readyLine ? 'info' : 'warn',
    RATE_LIMIT_PER_IP: '10000000',
    RATE_LIMIT_PER_KEY: '10000000',
    ...env,
  };
  const url = `http://127.0.0.1:${port}`;
  if (profile) fs.mkdirSync(PROFILE_DIR, { recursive: true });
  // The flag `npm start` runs the server with (package.json).
  const flags = ['--max-semi-space-size=32', ...nodeArgs];
  // Every thread writes its own profile into a folder of its own (Node names them by thread id).
  const threadsDir = profile ? path.join(PROFILE_DIR, `${profile}.threads`) : undefined;
  if (threadsDir) fs.rmSync(threadsDir, { recursive: true, force: true });
  const args = profile ? [...flags, '--cpu-prof', `--cpu-prof-dir=${threadsDir}`, 'dist/main.js'] : [...flags, 'dist/main.js'];
  const proc = await startProcess(args, fullEnv, readyLine ? { readyLine } : { readyUrl: `${url}/api/v1/server/ok` });
  const gateway = { ...proc, url, port, dataDir, env: fullEnv, threadProfiles: [] };
  if (!profile) return gateway;
  gateway.profileFile = path.join(PROFILE_DIR, `${profile}.cpuprofile`);
  gateway.stop = async () => {
    await proc.stop();
    gateway.threadProfiles = collectThreadProfiles(threadsDir, profile);
  };
  return gateway;
}

/**
 * Names the profiles a stopped gateway wrote: the main thread's `<profile>.cpuprofile`, the others
 * `<profile>.<thread>.cpuprofile` (the webhook delivery thread, SQLite's checkpointer). Returns the others.
 */
function collectThreadProfiles(threadsDir, profile) {
  const others = [];
  for (const name of fs.existsSync(threadsDir) ? fs.readdirSync(threadsDir) : []) {
    const tid = Number(name.split('.')[4]);
    const file = path.join(threadsDir, name);
    const text = tid === 0 ? '' : fs.readFileSync(file, 'utf8');
    const thread =
      tid === 0
        ? undefined
        : text.includes('webhook-thread')
          ? 'webhook-delivery-thread'
          : text.includes('"functionName":"checkpoint"')
            ? 'checkpointer'
            : `thread-${tid}`;
    const target = path.join(PROFILE_DIR, thread ? `${profile}.${thread}.cpuprofile` : `${profile}.cpuprofile`);
    fs.renameSync(file, target);
    if (thread) others.push({ thread, file: target });
  }
  fs.rmSync(threadsDir, { recursive: true, force: true });
  return others;
}

/**
 * Where the time went in a CPU profile: self time grouped by package (node_modules/<name>), by file
 * of the gateway (dist/...), or by the runtime's own entries (garbage collector, idle), in percent.
 */
export function summariseProfile(file, top = 15) {
  if (!file || !fs.existsSync(file)) return undefined;
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const { url, functionName } = nodes.get(id).callFrame;
    const key = !url
      ? functionName
      : url.includes('node_modules/')
        ? url.split('node_modules/').pop().split('/')[0]
        : url.includes('/dist/')
          ? `dist/${url.split('/dist/').pop()}`
          : url.replace(/^node:internal\/.*$/, 'node internals');
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  return {
    file: path.relative(ROOT, file),
    selfTimePercent: Object.fromEntries(
      [...self]
        .sort((a, b) => b[1] - a[1])
        .slice(0, top)
        .map(([key, dt]) => [key, Math.round((dt / total) * 1000) / 10]),
    ),
  };
}

export async function api(url, method, route, key, body) {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: { apikey: key, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${route} -> ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * Runs bench/cluster-load.mjs in its own process: POST /send/text with random instances' tokens.
 * `config` is { ports, instances: [{ token, port }], connections, duration, number }; resolves with
 * its JSON line.
 */
export async function tokenLoad(config) {
  const dir = tempDir('waygate-bench-load-');
  const file = path.join(dir, 'load.json');
  fs.writeFileSync(file, JSON.stringify(config));
  try {
    return await new Promise((resolve, reject) => {
      let out = '';
      const child = spawn(process.execPath, [path.join(ROOT, 'bench/cluster-load.mjs'), file], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      child.stdout.on('data', (d) => (out += d.toString()));
      child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`cluster-load exited with ${code}`))));
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

let numberSeq = 0;
export function benchNumber() {
  numberSeq += 1;
  return `55119${String(numberSeq).padStart(8, '0')}`;
}

/** Creates a sandbox instance and links it to a fresh number. */
export async function connectedSandbox(url, body = {}) {
  const created = await api(url, 'POST', '/api/v1/instance/create', ADMIN, {
    instanceName: `b${numberSeq + 1}-${Math.random().toString(36).slice(2, 8)}`,
    network: 'sandbox',
    ...body,
  });
  await api(url, 'POST', '/api/v1/instance/connect', created.token);
  const number = benchNumber();
  await api(url, 'POST', '/api/v1/sandbox/scan', ADMIN, { instanceId: created.instanceId, number });
  return { id: created.instanceId, token: created.token, secret: created.webhookSecret, number };
}

/**
 * Runs autocannon in its own process (asynchronously, so receivers in this process keep serving);
 * returns requests/s, latency percentiles and errors.
 */
export async function autocannon({ url, method = 'GET', headers = {}, body, connections = 64, duration = 10, rate }) {
  const args = [
    path.join(ROOT, 'node_modules/autocannon/autocannon.js'),
    '--json',
    '-c',
    String(connections),
    '-d',
    String(duration),
    '-m',
    method,
  ];
  // A fixed overall rate (requests/s over all connections) instead of as fast as possible.
  if (rate) args.push('-R', String(Math.round(rate)));
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  if (body !== undefined) args.push('-b', typeof body === 'string' ? body : JSON.stringify(body));
  args.push(url);
  const child = spawnNode('load', args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`autocannon exited with ${code}`);
  const r = JSON.parse(out);
  const non2xx = r.non2xx ?? 0;
  return {
    requestsPerSec: Math.round(r.requests.average),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: (r.errors ?? 0) + (r.timeouts ?? 0) + non2xx,
    total2xx: r['2xx'] ?? 0,
  };
}

/**
 * The send load: `POST /api/v1/send/text` from `token` to `number` over 64 connections for
 * `duration` seconds, as fast as they go, or with `rate` a steady pace (half load) after `warmup`
 * seconds of it left out (steady loads only).
 */
export function sendLoad(url, token, number, duration, rate = undefined, warmup = 0) {
  return (rate ? steadyLoad : autocannon)({
    rate,
    ...(rate ? { warmup } : {}),
    url: `${url}/api/v1/send/text`,
    method: 'POST',
    headers: { apikey: token, 'content-type': 'application/json' },
    body: { number, text: 'benchmark message' },
    connections: 64,
    duration,
  });
}

/**
 * A steady load at `rate` requests/s in its own process (bench/steady-load.mjs): requests start at
 * an even pace and latency counts from when each was due. What "half load" means in the figures.
 * `warmup` seconds of the same load go first and are left out (the generator's own start).
 */
export async function steadyLoad({ url, method = 'POST', headers = {}, body, connections = 64, duration = 10, rate, warmup = 0 }) {
  const options = {
    url,
    method,
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    connections,
    duration,
    rate,
    warmup,
  };
  const child = spawnNode('load', [path.join(ROOT, 'bench/steady-load.mjs'), JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`steady-load exited with ${code}`);
  return JSON.parse(out);
}

/** RSS of a process from /proc (bytes). */
export function rssOf(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb * 1024;
}

/** CPU seconds a process has used so far, all its threads (user and system; /proc/<pid>/stat). */
export function cpuSecondsOf(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(execSync('getconf CLK_TCK', { encoding: 'utf8' }).trim()) || 100;

/**
 * `load()` with the CPU time `pid` spent meanwhile, per 2xx answer (µs): what a request costs the
 * server whatever the load generator could offer (`cpuPerRequestUs`).
 */
export async function withCpuOf(pid, load) {
  const before = cpuSecondsOf(pid);
  const result = await load();
  const seconds = cpuSecondsOf(pid) - before;
  return { ...result, cpuPerRequestUs: result.total2xx > 0 ? Math.round((seconds * 1e7) / result.total2xx) / 10 : null };
}

/** Heap used, read from the gateway's /metrics (prom-client default metrics). */
export async function heapOf(url) {
  const text = await fetch(`${url}/metrics`).then(
    (r) => (r.ok ? r.text() : ''),
    () => '',
  );
  const match = /^nodejs_heap_size_used_bytes\s+([0-9.e+]+)/m.exec(text);
  return match ? Number(match[1]) : null;
}

export function emit(results, figure) {
  results.push(figure);
  console.log(JSON.stringify(figure));
}
