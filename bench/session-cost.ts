/**
 * The cost of connected WhatsApp sessions (issue 18): a gateway in this process links N WhatsApp
 * instances to the tests' fake WhatsApp server with the real Baileys client (paired through the API,
 * as a phone scanning the QR), each on a realistic account (fixtures/realistic-account.ts: 812
 * pre-keys uploaded, a history sync of 5,000 messages over 200 chats with 50 groups, 500 contacts,
 * app-state patches), waits until every account is in the stores, then reads RSS and heap per
 * connected session (after a full GC) at each size of SESSION_SIZES, and the CPU the idle gateway
 * spends with all of them connected. Then it restarts the gateway on the same data and times the
 * resume of every session (the WebSocket logins, then each session's offline backlog of 50
 * messages stored), at the gateway's resume pace (WHATSAPP_RESUME_PER_SECOND), and reads the
 * memory of the resumed sessions. Run by bench/run.mjs (`BENCH_ONLY=session_cost`) with tsx and
 * --expose-gc; prints one JSON line.
 *
 * The fake server runs in a child process (bench/fake-wa-server-process.ts; this process's Baileys
 * trusts the child's Noise root), so the figures are the gateway's alone; its own memory is reported
 * beside them. SESSION_FAKE_SERVER=inprocess runs it in this process as before: its side of each
 * connection (the phones' Signal encryption included) is then counted too.
 *
 * Knobs: SESSION_SIZES (10,30), SESSION_ACCOUNT (realistic | empty), SESSION_IDLE_SECONDS (20),
 * SESSION_RESUME (1; 0 skips the restart), SESSION_BACKLOG (50 offline messages per resumed
 * session), SESSION_FAKE_SERVER (process | inprocess), SESSION_LINK_CONCURRENCY (links in flight
 * at once with the server in a child process; 1), SESSION_FAKE_SERVER_PORT (0: any free port), and
 * SESSION_RESUME_TIMEOUT_SECONDS (900: the resume figure then says how many logged in),
 * SESSION_RESUME_PROFILE (a file: this process's CPU profile from the restart to the caught-up
 * stores, the gateway's side of the resume), and the gateway's WHATSAPP_RESUME_PER_SECOND and
 * WHATSAPP_MESSAGE_CACHE.
 */
// First, as in src/main.ts: the gateway measured here runs in this process.
import '../src/network/whatsapp/oneof-getter.js';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { FakeWaServer, type FakeConnection } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import { REALISTIC, RealisticAccount } from '../src/network/whatsapp/fixtures/realistic-account.js';
import { startGateway, type TestGateway } from '../test/support/gateway.js';
import { FakeWaServerProcess } from './fake-wa-server-process.js';
import { pairedWhatsApp } from './whatsapp-pairing.js';

// tsx maps every stack trace to the sources; `npm start` runs the build without source maps. Baileys
// captures a stack for each frame it sends (its promise timeouts), and mapping those was ~6 % of a
// resume's CPU here that the gateway in production does not spend.
process.setSourceMapsEnabled(false);

const QUICK = process.env.BENCH_QUICK === '1';
// A realistic first link costs this machine ~2-5 s (history into the stores, app state, Signal):
// 10 and 30 keep the scenario near 3 minutes; SESSION_SIZES=10,100,200 is the full figure (~20 min).
const SIZES = (process.env.SESSION_SIZES ?? (QUICK ? '5,10' : '10,30')).split(',').map(Number);
const IDLE_SECONDS = Number(process.env.SESSION_IDLE_SECONDS ?? (QUICK ? 5 : 20));
const REALISTIC_ACCOUNT = (process.env.SESSION_ACCOUNT ?? 'realistic') === 'realistic';
const RESUME = process.env.SESSION_RESUME !== '0';
const IN_PROCESS = process.env.SESSION_FAKE_SERVER === 'inprocess';
const RESUME_TIMEOUT_SECONDS = Number(process.env.SESSION_RESUME_TIMEOUT_SECONDS ?? 900);
const LINK_CONCURRENCY = IN_PROCESS ? 1 : Number(process.env.SESSION_LINK_CONCURRENCY ?? 1);
const RESUME_PROFILE = process.env.SESSION_RESUME_PROFILE;

/** Starts this process's CPU profiler; the returned function stops it and writes `file`. */
async function profileInto(file: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

const gc = (globalThis as { gc?: () => void }).gc;

async function reading(): Promise<{ rss: number; heap: number; external: number }> {
  // Twice, with a turn between: weak references and finalizers settle.
  for (let i = 0; i < 2; i += 1) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const { rss, heapUsed, external } = process.memoryUsage();
  return { rss, heap: heapUsed, external };
}

async function total(gw: TestGateway, query: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`${sql.raw(query)}`.execute(gw.storage.db);
  return Number(rows[0]?.n ?? 0);
}

/** Waits until the stores hold every linked account whole (messages, contacts, app state), plus `extra` messages each. */
async function settled(gw: TestGateway, sessions: number, extra = 0): Promise<void> {
  if (!REALISTIC_ACCOUNT) return;
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    const messages = await total(gw, 'select count(*) as n from messages');
    const contacts = await total(gw, 'select count(*) as n from whatsapp_contacts');
    const muted = await total(gw, 'select count(*) as n from whatsapp_chats where muted_until is not null');
    if (messages >= sessions * (REALISTIC.messages + extra) && contacts >= sessions * REALISTIC.contacts && muted >= sessions * 20) return;
    if (Date.now() > deadline) throw new Error(`accounts not settled: ${messages} messages, ${contacts} contacts, ${muted} muted chats`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const BACKLOG = Number(process.env.SESSION_BACKLOG ?? REALISTIC.backlog);
let server: FakeWaServer | FakeWaServerProcess;
let wsUrl: string;
if (IN_PROCESS) {
  const account = REALISTIC_ACCOUNT ? new RealisticAccount({ ...REALISTIC, backlog: BACKLOG }) : undefined;
  const inProcess = new FakeWaServer(account ? { account } : {});
  wsUrl = await inProcess.start();
  // The payloads every account shares are built before the baseline.
  await account?.prepare();
  server = inProcess;
} else {
  server = await FakeWaServerProcess.start({
    account: REALISTIC_ACCOUNT ? 'realistic' : 'empty',
    backlog: BACKLOG,
    port: Number(process.env.SESSION_FAKE_SERVER_PORT ?? 0),
  });
  wsUrl = server.url;
}
/** Calls `listener` with the user of every login the server sees (the resumed sessions). */
function onLogin(listener: (username: string | undefined) => void): () => void {
  if (server instanceof FakeWaServerProcess) {
    server.on('login', listener);
    return () => server.off('login', listener);
  }
  const onClient = (connection: FakeConnection) => {
    if (connection.kind === 'login') listener(connection.username);
  };
  server.on('client', onClient);
  return () => server.off('client', onClient);
}
const serverMemory = () => (server instanceof FakeWaServerProcess ? server.memory() : Promise.resolve(undefined));
const phoneOf = (n: number) => `55119${String(70_000_000 + n).padStart(8, '0')}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-session-cost-'));
const env: Record<string, string> = { WHATSAPP_WS_URL: wsUrl, RATE_LIMIT_PER_IP: '10000000', RATE_LIMIT_PER_KEY: '10000000' };
// The gateway's own knobs, passed through (the resume pace, the message cache).
for (const name of ['WHATSAPP_RESUME_PER_SECOND', 'WHATSAPP_MESSAGE_CACHE', 'WHATSAPP_CONNECT_TIMEOUT_MS'])
  if (process.env[name]) env[name] = process.env[name];
let gw = await startGateway({ dataDir, env });
try {
  const empty = await reading();
  const sizes = [];
  const readings: { sessions: number; rss: number; heap: number }[] = [];
  let linked = 0;
  const started = performance.now();
  for (const size of SIZES) {
    while (linked < size) {
      const batch = Math.min(LINK_CONCURRENCY, size - linked);
      await Promise.all(Array.from({ length: batch }, (_, i) => pairedWhatsApp(gw, server, phoneOf(linked + i + 1))));
      linked += batch;
      if (linked % 100 < batch) console.error(`session_cost: ${linked} linked, ${Math.round(performance.now() - started)} ms`);
    }
    await settled(gw, linked);
    const r = await reading();
    const fakeServer = await serverMemory();
    const previous = readings.at(-1);
    readings.push({ sessions: size, rss: r.rss, heap: r.heap });
    const figures = {
      sessions: size,
      rssBytes: r.rss,
      heapBytes: r.heap,
      rssPerSession: Math.round((r.rss - empty.rss) / size),
      heapPerSession: Math.round((r.heap - empty.heap) / size),
      // Buffers and other memory V8 knows of outside its heap; RSS beyond heap + external is the
      // allocator's (memory freed but not returned to the system, native libraries).
      externalPerSession: Math.round((r.external - empty.external) / size),
      // What each session linked since the previous size added: the average above also carries the
      // first links' one-time cost (code compiled, caches filled), which the first size bears whole.
      ...(previous
        ? {
            rssPerAddedSession: Math.round((r.rss - previous.rss) / (size - previous.sessions)),
            heapPerAddedSession: Math.round((r.heap - previous.heap) / (size - previous.sessions)),
          }
        : {}),
      linkedAndSettledMs: Math.round(performance.now() - started),
      ...(fakeServer ? { fakeServerProcess: { rssBytes: fakeServer.rss, heapBytes: fakeServer.heap } } : {}),
    };
    sizes.push(figures);
    console.error(`session_cost: ${JSON.stringify(figures)}`);
  }
  const linkMs = Math.round(performance.now() - started);
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const used = process.cpuUsage(before);
  const idle = {
    sessions: linked,
    seconds: IDLE_SECONDS,
    cpuPercentOfOneCore: Math.round(((used.user + used.system) / 1000 / (IDLE_SECONDS * 1000)) * 1000) / 10,
  };

  let resume: Record<string, unknown> | undefined;
  if (RESUME) {
    await gw.stop();
    const stopped = await reading();
    // Distinct accounts logged in; `logins` counts every login (a session that timed out and
    // logged in again counts twice).
    const accounts = new Set<string | undefined>();
    let logins = 0;
    let allLoggedIn: () => void = () => undefined;
    const loggedIn = new Promise<boolean>((resolve) => (allLoggedIn = () => resolve(true)));
    const stopCounting = onLogin((username) => {
      logins += 1;
      accounts.add(username);
      if (accounts.size === linked) allLoggedIn();
    });
    const stopProfile = RESUME_PROFILE ? await profileInto(RESUME_PROFILE) : undefined;
    const restarted = performance.now();
    const resumeCpu = process.cpuUsage();
    const progress = setInterval(
      () =>
        console.error(`session_cost: resume ${Math.round(performance.now() - restarted)} ms: ${accounts.size} accounts, ${logins} logins`),
      5000,
    );
    gw = await startGateway({ dataDir, env });
    const listeningMs = Math.round(performance.now() - restarted);
    const complete = await Promise.race([
      loggedIn,
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), RESUME_TIMEOUT_SECONDS * 1000)),
    ]);
    const loggedInMs = Math.round(performance.now() - restarted);
    if (complete) await settled(gw, linked, BACKLOG);
    const caughtUpMs = Math.round(performance.now() - restarted);
    const resumeCpuUsed = process.cpuUsage(resumeCpu);
    await stopProfile?.();
    clearInterval(progress);
    stopCounting();
    const r = await reading();
    const fakeServer = await serverMemory();
    resume = {
      sessions: linked,
      pacePerSecond: gw.config.whatsapp.resumePerSecond,
      listeningMs,
      ...(complete ? {} : { incomplete: `after ${RESUME_TIMEOUT_SECONDS} s only ${accounts.size} accounts had logged in` }),
      loggedInMs,
      logins,
      caughtUpMs,
      // The gateway's CPU over the resume (100: one core busy the whole time).
      cpuPercentOfOneCore: Math.round(((resumeCpuUsed.user + resumeCpuUsed.system) / 1000 / caughtUpMs) * 1000) / 10,
      sessionsPerSecond: Math.round((linked / (caughtUpMs / 1000)) * 10) / 10,
      rssPerSession: Math.round((r.rss - stopped.rss) / linked),
      heapPerSession: Math.round((r.heap - stopped.heap) / linked),
      externalPerSession: Math.round((r.external - stopped.external) / linked),
      ...(fakeServer ? { fakeServerProcess: { rssBytes: fakeServer.rss, heapBytes: fakeServer.heap } } : {}),
      ...(RESUME_PROFILE ? { profileFile: RESUME_PROFILE } : {}),
    };
  }

  console.log(
    JSON.stringify({
      figure: 'session_cost_whatsapp',
      account: REALISTIC_ACCOUNT
        ? `realistic (fake WhatsApp server): 812 pre-keys uploaded, history sync of 5,000 messages over 200 chats (50 groups), 500 contacts, app-state patches; ${BACKLOG} offline messages on resume`
        : 'linked, empty (fake WhatsApp server)',
      gcForced: gc !== undefined,
      fakeServer: IN_PROCESS ? 'in the same process (its side counted)' : 'child process (the figures are the gateway alone)',
      linkConcurrency: LINK_CONCURRENCY,
      baseline: {
        name: IN_PROCESS ? 'same gateway and fake server, no session' : 'same gateway, no session',
        rssBytes: empty.rss,
        heapBytes: empty.heap,
      },
      sizes,
      linkMs,
      idle,
      ...(resume ? { resume } : {}),
    }),
  );
} finally {
  await gw.stop();
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
// Baileys' timers would keep the process alive.
process.exit(0);
