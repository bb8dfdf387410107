/**
 * The cost of connected WhatsApp sessions (issue 18): a gateway in this process links N WhatsApp
 * instances to the tests' fake WhatsApp server with the real Baileys client (paired through the API,
 * as a phone scanning the QR), then reads RSS and heap per connected session (after a full GC) at
 * each size of SESSION_SIZES, and the CPU the idle gateway spends with all of them connected.
 * Run by bench/run.mjs (`BENCH_ONLY=session_cost`) with tsx and --expose-gc; prints one JSON line.
 *
 * The account behind each session is the fake server's: linked, empty (no history sync, contacts,
 * groups or app state). The fake server runs in the same process (Baileys must trust its Noise
 * root), so its side of each connection is in the figure too: an upper bound for the client side.
 */
import { FakeWaServer } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import { startGateway } from '../test/support/gateway.js';
import { pairedWhatsApp } from './whatsapp-pairing.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SIZES = (process.env.SESSION_SIZES ?? (QUICK ? '10,50' : '10,100,200')).split(',').map(Number);
const IDLE_SECONDS = Number(process.env.SESSION_IDLE_SECONDS ?? (QUICK ? 5 : 20));

const gc = (globalThis as { gc?: () => void }).gc;

async function reading(): Promise<{ rss: number; heap: number }> {
  // Twice, with a turn between: weak references and finalizers settle.
  for (let i = 0; i < 2; i += 1) {
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed };
}

const server = new FakeWaServer();
const wsUrl = await server.start();
const gw = await startGateway({ env: { WHATSAPP_WS_URL: wsUrl, RATE_LIMIT_PER_IP: '10000000', RATE_LIMIT_PER_KEY: '10000000' } });
try {
  const empty = await reading();
  const sizes = [];
  let linked = 0;
  const started = performance.now();
  for (const size of SIZES) {
    while (linked < size) {
      linked += 1;
      await pairedWhatsApp(gw, server, `55119${String(70_000_000 + linked).padStart(8, '0')}`);
    }
    const r = await reading();
    sizes.push({
      sessions: size,
      rssBytes: r.rss,
      heapBytes: r.heap,
      rssPerSession: Math.round((r.rss - empty.rss) / size),
      heapPerSession: Math.round((r.heap - empty.heap) / size),
    });
  }
  const linkMs = Math.round(performance.now() - started);
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const used = process.cpuUsage(before);
  console.log(
    JSON.stringify({
      figure: 'session_cost_whatsapp',
      account: 'linked, empty (fake WhatsApp server)',
      gcForced: gc !== undefined,
      baseline: { name: 'same gateway and fake server, no session', rssBytes: empty.rss, heapBytes: empty.heap },
      sizes,
      linkMs,
      idle: {
        sessions: linked,
        seconds: IDLE_SECONDS,
        cpuPercentOfOneCore: Math.round(((used.user + used.system) / 1000 / (IDLE_SECONDS * 1000)) * 1000) / 10,
      },
    }),
  );
} finally {
  await gw.stop();
  await server.stop();
}
// Baileys' timers would keep the process alive.
process.exit(0);
