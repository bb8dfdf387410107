/**
 * Storage at scale (issue 18): a gateway whose database holds STORAGE_MESSAGES stored messages over
 * STORAGE_INSTANCES instances, generated straight into the database (one INSERT ... SELECT per
 * instance), then the read routes under load, on SQLite and PostgreSQL. Run by bench/run.mjs
 * (`BENCH_ONLY=storage_scale`) with tsx: a gateway in this process, beside the fake WhatsApp server
 * of the tests, pairs the WhatsApp account and generates the data; then the built gateway measured
 * starts in its own process on that data (bench/trust-test-root.mjs makes its Baileys trust the fake
 * server), and autocannon loads it from another process, each route after a warm-up of the same
 * load. Prints one JSON line per database.
 *
 * Measured: a WhatsApp instance with a realistic account (200 chats, 5,000 messages, contacts,
 * labels) — /chat/list (first and third page), /chat/history, /message/find (newest, one chat,
 * text); a connected sandbox instance with the same shape — /chat/list and /chat/history (the
 * world's chat views, read back from the message store once); /message/find on a typical
 * instance; and the outbox pruner moving a minute of 2,000 events/s into the event archive.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { FakeWaServer, testRootPublicKey } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import { dropSchema } from '../src/storage/db.js';
import { personJid, REALISTIC, realisticChatTraits } from '../src/network/whatsapp/fixtures/realistic-account.js';
import type { Database } from '../src/storage/schema.js';
import { pairedWhatsApp } from './whatsapp-pairing.js';
import { httpApi, newSchemaName, PG_URL, startGateway, waitFor, type DialectName, type TestGateway } from '../test/support/gateway.js';
// @ts-expect-error plain JavaScript module of the bench
import { autocannon, startGateway as startBuiltGateway } from './lib.mjs';

const QUICK = process.env.BENCH_QUICK === '1';
const MESSAGES = Number(process.env.STORAGE_MESSAGES ?? (QUICK ? 100_000 : 1_000_000));
const INSTANCES = Number(process.env.STORAGE_INSTANCES ?? (QUICK ? 100 : 1_000));
const SECONDS = Number(process.env.STORAGE_SECONDS ?? (QUICK ? 2 : 5));
const DIALECTS = (process.env.STORAGE_DIALECTS ?? 'sqlite,postgres').split(',') as DialectName[];
/**
 * Per-request cost, steadier than a p99 on a shared machine: each route is first asked this many
 * times one after another (one connection, nothing else in flight) and the fastest and median
 * times are reported (`sequential`). 0 skips it.
 */
const SEQUENTIAL = Number(process.env.STORAGE_SEQUENTIAL ?? (QUICK ? 50 : 200));
/** STORAGE_LOAD=0 skips the autocannon loads (only the sequential timings and the pruner). */
const LOAD = process.env.STORAGE_LOAD !== '0';
/** STORAGE_PROFILE=1: a CPU profile of each measured gateway (bench/results/profiles/storage-scale-<database>/). */
const PROFILE = process.env.STORAGE_PROFILE === '1';
/** STORAGE_KEEP_SCHEMA=1 keeps the PostgreSQL schema with the generated data (its name on stderr), to EXPLAIN statements against. */
const KEEP_SCHEMA = process.env.STORAGE_KEEP_SCHEMA === '1';
/** Seconds of the same load before each measured one, left out: the figures are a warm gateway's. */
const WARM_SECONDS = Number(process.env.STORAGE_WARM_SECONDS ?? (QUICK ? 1 : 3));
/**
 * Where the measured gateway runs. `process` (default): the built gateway (dist/main.js, as `npm
 * start` runs it) in its own process on the generated data, so neither this process's generator, tsx
 * nor the fake WhatsApp server share its event loop. `inprocess`: the gateway that generated the data.
 */
const IN_PROCESS = process.env.STORAGE_GATEWAY === 'inprocess';
const TEST_ADMIN_KEY = 'test-admin-key-0123456789';
/**
 * The measured accounts: the realistic account of the issue (200 chats, 5,000 messages, the same
 * pinned, archived, muted, unread and labelled chats as the fake server's realistic account;
 * src/network/whatsapp/fixtures/realistic-account.ts). Here every chat is a person's.
 */
const ACCOUNT_CHATS = REALISTIC.chats;
const ACCOUNT_MESSAGES = REALISTIC.messages;
/** A minute of events at 2,000 events/s, delivered and past the retention: what one prune round must move. */
const PRUNE_EVENTS = QUICK ? 20_000 : 120_000;
const T0 = REALISTIC.t0;

interface Autocannon {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  total2xx: number;
}

const chatJid = personJid;

/** `count` messages of one instance over `chats` person chats, one every 30 s, half sent, half received. */
async function generateMessages(db: Kysely<Database>, dialect: DialectName, instanceId: string, count: number, chats: number) {
  const series =
    dialect === 'postgres'
      ? sql`generate_series(0, ${sql.lit(count - 1)}) as s(n)`
      : sql`(with recursive s(n) as (select 0 union all select n + 1 from s where n < ${sql.lit(count - 1)}) select n from s) as s`;
  const createdAt = Date.now() - count * 1000;
  await sql`
    insert into messages (instance_id, message_id, remote_jid, from_me, participant, push_name, message_type, content,
                          message_timestamp, media_key, media_mimetype, media_size, media_file_name, media_sha256, created_at)
    select ${instanceId}, 'BENCH' || ${instanceId.slice(0, 8)} || '-' || n,
           '55119' || substr(cast(${sql.lit(100_000_000)} + n % ${sql.lit(chats)} as text), 2) || '@s.whatsapp.net',
           n % 2, null, 'Bench', 'conversation', '{"conversation":"bench message ' || n || '"}',
           ${sql.lit(T0)} + n * 30, null, null, null, null, null, ${sql.lit(createdAt)} + n
    from ${series}`.execute(db);
}

/** The WhatsApp driver's own tables for the account: chats (5 pinned, 20 archived), contacts, labels. */
async function generateWhatsAppAccount(db: Kysely<Database>, instanceId: string) {
  const now = Date.now();
  const perChat = ACCOUNT_MESSAGES / ACCOUNT_CHATS;
  const chats = Array.from({ length: ACCOUNT_CHATS }, (_, chat) => ({
    instance_id: instanceId,
    jid: chatJid(chat),
    name: null,
    unread_count: realisticChatTraits(chat).unread,
    marked_unread: 0,
    pinned_at: realisticChatTraits(chat).pinned ? now - chat : null,
    archived: realisticChatTraits(chat).archived ? 1 : 0,
    muted_until: realisticChatTraits(chat).muted ? -1 : null,
    // The newest message of chat c is n = c + (perChat - 1) * ACCOUNT_CHATS.
    conversation_timestamp: T0 + (chat + (perChat - 1) * ACCOUNT_CHATS) * 30,
    cleared_before: chat % 50 === 1 ? T0 + ACCOUNT_MESSAGES * 15 : null,
    deleted: 0,
    updated_at: now,
  }));
  await db.insertInto('whatsapp_chats').values(chats).execute();
  await db
    .insertInto('whatsapp_contacts')
    .values(
      chats.map((c, i) => ({
        instance_id: instanceId,
        jid: c.jid,
        name: `Contact ${i}`,
        notify: null,
        verified_name: null,
        updated_at: now,
      })),
    )
    .execute();
  await db
    .insertInto('whatsapp_labels')
    .values({ instance_id: instanceId, label_id: '1', name: 'Pedido', color: 2, updated_at: now })
    .execute();
  await db
    .insertInto('whatsapp_label_links')
    .values(
      chats.slice(0, REALISTIC.labelledChats).map((c) => ({ instance_id: instanceId, label_id: '1', chat_jid: c.jid, message_id: '' })),
    )
    .execute();
}

/** `count` requests one after another: the fastest and median times (ms, 2 decimals). */
/** What the measurements need of a gateway, in this process or another. */
type Measured = Pick<TestGateway, 'url' | 'api'>;

async function sequential(gw: Measured, token: string, route: string, count: number): Promise<{ fastestMs: number; medianMs: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    const response = await fetch(`${gw.url}${route}`, { headers: { apikey: token } });
    await response.arrayBuffer();
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`${route} -> ${response.status}`);
  }
  times.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { fastestMs: round(times[0] ?? 0), medianMs: round(times[Math.floor(times.length / 2)] ?? 0) };
}

async function load(gw: Measured, token: string, route: string): Promise<Partial<Autocannon> & { firstMs: number }> {
  const first = performance.now();
  const check = await gw.api('GET', route, { key: token });
  if (check.status !== 200) throw new Error(`${route} -> ${check.status} ${JSON.stringify(check.body)}`);
  const firstMs = Math.round(performance.now() - first);
  const timed = SEQUENTIAL > 0 ? { sequential: await sequential(gw, token, route, SEQUENTIAL) } : {};
  if (!LOAD) return { firstMs, ...timed };
  const options = { url: `${gw.url}${route}`, headers: { apikey: token }, connections: 8 };
  if (WARM_SECONDS > 0) await autocannon({ ...options, duration: WARM_SECONDS });
  const result = (await autocannon({ ...options, duration: SECONDS })) as Autocannon;
  return { ...result, firstMs, ...timed };
}

/**
 * The built gateway in its own process on the data `generated` left (its data folder and, on
 * PostgreSQL, its schema), its Baileys trusting the fake server of this process; resolves once the
 * measured instances are connected again.
 */
async function builtGateway(generated: TestGateway, schema: string | undefined, wsUrl: string, tokens: string[]) {
  const storageEnv = schema ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : {};
  const child = await startBuiltGateway(
    {
      DATA_DIR: generated.dataDir,
      GLOBAL_API_KEY: TEST_ADMIN_KEY,
      WHATSAPP_WS_URL: wsUrl,
      MESSAGE_RETENTION_DAYS: '0',
      BENCH_TRUST_ROOT: testRootPublicKey().toString('base64'),
      ...storageEnv,
    },
    {
      nodeArgs: [
        '--import',
        './bench/trust-test-root.mjs',
        ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=bench/results/profiles/storage-scale-${schema ? 'postgres' : 'sqlite'}`] : []),
      ],
    },
  );
  const gw = { url: child.url as string, api: httpApi(child.url), stop: () => child.stop() as Promise<void> };
  await waitFor(
    async () => {
      for (const token of tokens) {
        const status = await gw.api('GET', '/api/v1/instance/status', { key: token });
        if (status.body?.status !== 'CONNECTED') return undefined;
      }
      return true;
    },
    60_000,
    'the measured instances to connect again',
  );
  return gw;
}

async function pruneRate(gw: TestGateway, instanceId: string): Promise<{ events: number; ms: number; eventsPerSec: number }> {
  const old = Date.now() - 7_200_000;
  for (let i = 0; i < PRUNE_EVENTS; i += 5_000) {
    await gw.outbox.append(
      Array.from({ length: Math.min(5_000, PRUNE_EVENTS - i) }, (_, k) => ({
        eventId: randomUUID(),
        instanceId,
        instanceName: 'bench',
        type: 'MESSAGE' as const,
        body: JSON.stringify({ event: 'MESSAGE', data: { text: 'x'.repeat(300), n: i + k } }),
        createdAt: old + i + k,
        sinks: [],
      })),
    );
  }
  const started = performance.now();
  const moved = await gw.outbox.prune(Date.now() - 3_600_000, true);
  const ms = performance.now() - started;
  return { events: moved, ms: Math.round(ms), eventsPerSec: Math.round(moved / (ms / 1000)) };
}

async function measure(dialect: DialectName) {
  const server = new FakeWaServer();
  const wsUrl = await server.start();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-scale-'));
  const schema = dialect === 'postgres' ? newSchemaName() : undefined;
  const gw = await startGateway({
    dialect,
    dataDir,
    ...(schema ? { schema, keepSchema: true } : {}),
    env: { WHATSAPP_WS_URL: wsUrl, RATE_LIMIT_PER_IP: '10000000', RATE_LIMIT_PER_KEY: '10000000', MESSAGE_RETENTION_DAYS: '0' },
  });
  let generatorRunning = true;
  let built: Awaited<ReturnType<typeof builtGateway>> | undefined;
  const started = performance.now();
  try {
    const wa = await pairedWhatsApp(gw, server, '5511912340000');
    const sandbox = await gw.api('POST', '/api/v1/instance/create', {
      key: gw.adminKey,
      body: { instanceName: 'sandbox-account', network: 'sandbox' },
    });
    const others: { id: string; token: string }[] = [];
    for (let i = 2; i < INSTANCES; i += 1) {
      const created = await gw.api('POST', '/api/v1/instance/create', {
        key: gw.adminKey,
        body: { instanceName: `s${i}`, network: 'sandbox' },
      });
      others.push({ id: created.body.instanceId, token: created.body.token });
    }
    const db = gw.storage.db;
    await generateMessages(db, dialect, wa.id, ACCOUNT_MESSAGES, ACCOUNT_CHATS);
    await generateWhatsAppAccount(db, wa.id);
    await generateMessages(db, dialect, sandbox.body.instanceId, ACCOUNT_MESSAGES, ACCOUNT_CHATS);
    // Linked after its messages are stored: a pairing reads the account back from the store (its
    // initial HISTORY_SYNC), as a restart does, and keeps what it read.
    await gw.api('POST', '/api/v1/instance/connect', { key: sandbox.body.token });
    await gw.api('POST', '/api/v1/sandbox/scan', {
      key: gw.adminKey,
      body: { instanceId: sandbox.body.instanceId, number: '5511912349999' },
    });
    const perOther = Math.floor((MESSAGES - 2 * ACCOUNT_MESSAGES) / Math.max(1, others.length));
    for (const other of others) await generateMessages(db, dialect, other.id, perOther, 20);
    if (dialect === 'postgres') await sql`analyze`.execute(db);
    const stored = Number(
      (
        await db
          .selectFrom('messages')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
    const generatedMs = Math.round(performance.now() - started);

    const chat = encodeURIComponent(chatJid(7).split('@')[0]!);
    const typical = others[Math.floor(others.length / 2)]!;
    const routes: [string, string, string][] = [
      ['whatsapp_chat_list', wa.token, '/api/v1/chat/list?limit=50'],
      ['whatsapp_chat_list_page_3', wa.token, '/api/v1/chat/list?offset=100&limit=50'],
      ['whatsapp_chat_history', wa.token, `/api/v1/chat/history?chatId=${chat}&limit=50`],
      ['message_find_newest', wa.token, '/api/v1/message/find?limit=50'],
      ['message_find_chat', wa.token, `/api/v1/message/find?chatId=${chat}&limit=50`],
      ['message_find_text', wa.token, '/api/v1/message/find?text=message%204242&limit=50'],
      ['message_find_typical_instance', typical.token, '/api/v1/message/find?limit=50'],
      ['sandbox_chat_list', sandbox.body.token, '/api/v1/chat/list?limit=50'],
      ['sandbox_chat_history', sandbox.body.token, `/api/v1/chat/history?chatId=${chat}&limit=50`],
    ];
    const prune = await pruneRate(gw, typical.id);
    if (!IN_PROCESS) {
      await gw.stop();
      generatorRunning = false;
      built = await builtGateway(gw, schema, wsUrl, [wa.token, sandbox.body.token]);
    }
    const measured: Measured = built ?? gw;
    const results: Record<string, Partial<Autocannon> & { firstMs: number }> = {};
    for (const [name, token, route] of routes) {
      results[name] = await load(measured, token, route).catch((error: unknown) => {
        throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      });
    }
    return {
      figure: 'storage_scale',
      database: dialect,
      gateway: IN_PROCESS ? 'in this process (tsx)' : 'built, its own process',
      warmSeconds: WARM_SECONDS,
      storedMessages: stored,
      instances: INSTANCES,
      generatedMs,
      routes: results,
      ...(LOAD ? { worstP99Ms: Math.max(...Object.values(results).map((r) => r.p99Ms ?? 0)) } : {}),
      goalP99Ms: 50,
      outboxPrune: { ...prune, goalEventsPerSec: 2_000 },
    };
  } finally {
    await built?.stop();
    if (generatorRunning) await gw.stop();
    if (schema && KEEP_SCHEMA) console.error(`storage_scale: kept schema ${schema}`);
    else if (schema) await dropSchema(PG_URL, schema);
    fs.rmSync(dataDir, { recursive: true, force: true });
    await server.stop();
  }
}

for (const dialect of DIALECTS) {
  const figure = await measure(dialect);
  console.log(JSON.stringify(figure));
}
// The fake server's sockets and Baileys' timers would keep the process alive.
process.exit(0);
