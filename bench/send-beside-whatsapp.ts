/**
 * The send road of a gateway that also holds connected WhatsApp sessions (issue 18). Every other send
 * figure runs a gateway with sandbox instances only; a production gateway has WhatsApp sessions, and
 * Baileys' key-store transactions use an AsyncLocalStorage, which on Node 20 turns on promise hooks
 * for every promise of the process while it is on (src/network/whatsapp/async-context.ts).
 *
 * One built gateway in its own process (as `npm start` runs it; bench/trust-test-root.mjs makes its
 * Baileys trust the fake WhatsApp server in a child process): the 64-connection send road on a
 * sandbox instance, then `BESIDE_WHATSAPP_SESSIONS` (3) WhatsApp instances linked through the API to
 * the fake server (empty accounts, idle once linked), then the same load again. Both loads follow 3 s
 * of the same load, left out. The second load writes into a table the first one grew (its rows cost
 * it slightly more). Run by bench/run.mjs (`BENCH_ONLY=send_road_beside_whatsapp`) with tsx; prints
 * one JSON line. `BESIDE_WHATSAPP_PROFILE=<dir>` runs the gateway under `--cpu-prof` into that folder
 * and adds each load's window (`process.hrtime` microseconds, the profile's clock) to the line.
 */
import { httpApi } from '../test/support/gateway.js';
import { FakeWaServerProcess } from './fake-wa-server-process.js';
// @ts-expect-error plain JavaScript module of the bench
import { ADMIN, connectedSandbox, sendLoad, startGateway } from './lib.mjs';
import { pairedWhatsApp } from './whatsapp-pairing.js';

const QUICK = process.env.BENCH_QUICK === '1';
const SESSIONS = Number(process.env.BESIDE_WHATSAPP_SESSIONS ?? 3);
const SECONDS = Number(process.env.BESIDE_WHATSAPP_SECONDS ?? (QUICK ? 5 : 15));
const WARM_SECONDS = QUICK ? 1 : 3;
const PROFILE_DIR = process.env.BESIDE_WHATSAPP_PROFILE;
const micros = () => Number(process.hrtime.bigint() / 1000n);

const server = await FakeWaServerProcess.start({ account: 'empty' });
const gw = await startGateway(
  { WHATSAPP_WS_URL: server.url, BENCH_TRUST_ROOT: server.root },
  { nodeArgs: ['--import', './bench/trust-test-root.mjs', ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [])] },
);
try {
  const sandbox = await connectedSandbox(gw.url);
  const load = (seconds: number) => sendLoad(gw.url, sandbox.token, '5511900000000', seconds);

  await load(WARM_SECONDS);
  const aloneFrom = micros();
  const alone = await load(SECONDS);
  const aloneTo = micros();

  const api = { api: httpApi(gw.url), adminKey: ADMIN };
  for (let i = 0; i < SESSIONS; i += 1) await pairedWhatsApp(api, server, `55119800${String(i).padStart(5, '0')}`);

  await load(WARM_SECONDS);
  const besideFrom = micros();
  const beside = await load(SECONDS);
  const besideTo = micros();
  console.log(
    JSON.stringify({
      figure: 'send_road_beside_whatsapp',
      unit: 'requests/s',
      whatsappSessions: SESSIONS,
      waygate: beside,
      baseline: { name: 'the same gateway before its WhatsApp sessions were linked', ...alone },
      ratio: Math.round((beside.requestsPerSec / alone.requestsPerSec) * 1000) / 1000,
      ...(PROFILE_DIR ? { profileWindows: { alone: [aloneFrom, aloneTo], beside: [besideFrom, besideTo] } } : {}),
    }),
  );
} finally {
  await gw.stop();
  await server.stop();
}
