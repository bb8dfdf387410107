/**
 * The nginx example of docs/deployment.md, run as written: the first ```nginx block after the
 * heading "## N processes behind a load balancer" is read from the page, its upstream `server` lines
 * replaced by two gateways in cluster mode (one PostgreSQL schema, one Redis prefix) and `listen 80`
 * by a free port, and a real nginx (Debian's, installed by scripts/nginx.mjs when missing) runs it.
 * Through nginx: instances are created and connected, sends for instances held by either process
 * answer 200, and WebSocket streams upgraded through nginx receive the events of an instance held
 * by the other process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNginx } from '../scripts/nginx.mjs';
import { dropSchema } from '../src/storage/db.js';
import { PG_URL, clusterEnv, newSchemaName, startGateway, uniqueName, uniqueNumber, waitFor, type TestGateway } from './support/gateway.js';
import { freePort } from './support/process.js';

const DOC = path.resolve(import.meta.dirname, '..', 'docs', 'deployment.md');
const HEADING = '## N processes behind a load balancer';

/** The nginx block of the page, as printed under HEADING. */
function nginxExample(markdown: string): string {
  const start = markdown.indexOf(`\n${HEADING}\n`);
  if (start < 0) throw new Error(`docs/deployment.md has no heading "${HEADING}"`);
  const block = /\n```nginx\n([\s\S]*?)\n```\n/.exec(markdown.slice(start));
  if (!block) throw new Error(`no \`\`\`nginx block after "${HEADING}"`);
  return block[1]!;
}

/** The example with its placeholders replaced: the upstream's servers and the listen port. */
function localised(example: string, upstreams: string[], port: number): string {
  const upstream = /(upstream waygate \{\n)([\s\S]*?)(\n\})/.exec(example);
  if (!upstream) throw new Error('the example has no "upstream waygate { ... }"');
  const lines = upstream[2]!.split('\n');
  const servers = lines.filter((line) => /^\s*server\s+\S+:\d+/.test(line));
  if (servers.length === 0) throw new Error('the upstream lists no server');
  const indent = /^\s*/.exec(servers[0]!)![0];
  const first = lines.indexOf(servers[0]!);
  const kept = lines.filter((line) => !servers.includes(line));
  kept.splice(first, 0, ...upstreams.map((address) => `${indent}server ${address};`));
  const replaced = example.replace(upstream[0], `${upstream[1]}${kept.join('\n')}${upstream[3]}`);
  if (!/^\s*listen 80;$/m.test(replaced)) throw new Error('the example does not "listen 80;"');
  return replaced.replace(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${port};`);
}

interface Stream {
  socket: WebSocket;
  events: any[];
}

function openStream(url: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const stream: Stream = { socket, events: [] };
    socket.on('message', (data: Buffer) => stream.events.push(JSON.parse(data.toString('utf8'))));
    socket.once('open', () => resolve(stream));
    socket.once('error', reject);
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
  });
}

describe('docs/deployment.md: the nginx example in front of two gateways in cluster mode', () => {
  const schema = newSchemaName();
  const env = clusterEnv();
  const gateways: TestGateway[] = [];
  const streams: Stream[] = [];
  let db: pg.Pool;
  let nginx: ChildProcess | undefined;
  let nginxOutput = '';
  let dir = '';
  let base = '';

  /**
   * An API call through nginx. A 503 `instance_moving` (an instance handed over between the
   * processes right then) is retried after its `retryAfter`, as the page tells clients to, for 10 s.
   */
  async function api(method: string, route: string, key: string, body?: unknown): Promise<{ status: number; body: any }> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const response = await fetch(`${base}${route}`, {
        method,
        headers: { apikey: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      const answer = { status: response.status, body: text ? JSON.parse(text) : undefined };
      if (answer.status !== 503 || answer.body?.code !== 'instance_moving' || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, answer.body.retryAfter * 1000));
    }
  }

  /** The gateway holding each instance's lease now (by its advertised address). */
  async function holders(): Promise<Map<string, TestGateway>> {
    const { rows } = await db.query<{ instance_id: string; address: string }>(
      `select l.instance_id, n.address from "${schema}".instance_leases l join "${schema}".cluster_nodes n on n.node_id = l.owner
       where l.expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint`,
    );
    const byUrl = new Map(gateways.map((gw) => [gw.url, gw]));
    return new Map(rows.flatMap((row) => (byUrl.has(row.address) ? [[row.instance_id, byUrl.get(row.address)!] as const] : [])));
  }

  beforeAll(async () => {
    // Fails (never skips) when nginx cannot be installed.
    const binary = ensureNginx(() => undefined);
    db = new pg.Pool({ connectionString: PG_URL, max: 2 });
    for (let i = 0; i < 2; i += 1) gateways.push(await startGateway({ dialect: 'postgres', schema, keepSchema: true, env }));
    await waitFor(
      async () => ((await db.query(`select count(*)::int as n from "${schema}".cluster_nodes`)).rows[0].n === 2 ? true : undefined),
      10_000,
      'two nodes announced',
    );

    const port = await freePort();
    const example = localised(
      nginxExample(fs.readFileSync(DOC, 'utf8')),
      gateways.map((gw) => new URL(gw.url).host),
      port,
    );
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-nginx-'));
    for (const temp of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) fs.mkdirSync(path.join(dir, temp));
    const config = [
      // As root, nginx's workers would run as nobody, who cannot use this folder.
      process.getuid?.() === 0 ? 'user root;' : '',
      'worker_processes 1;',
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log warn;`,
      'events { worker_connections 256; }',
      'http {',
      `  access_log ${dir}/access.log;`,
      `  client_body_temp_path ${dir}/body;`,
      `  proxy_temp_path ${dir}/proxy;`,
      `  fastcgi_temp_path ${dir}/fastcgi;`,
      `  uwsgi_temp_path ${dir}/uwsgi;`,
      `  scgi_temp_path ${dir}/scgi;`,
      example,
      '}',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'nginx.conf'), config);
    nginx = spawn(binary, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
    nginx.stdout!.on('data', (d: Buffer) => (nginxOutput += d.toString()));
    nginx.stderr!.on('data', (d: Buffer) => (nginxOutput += d.toString()));
    base = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => {
        if (nginx!.exitCode !== null) throw new Error(`nginx exited (${nginx!.exitCode}): ${nginxOutput}`);
        const ok = await fetch(`${base}/api/v1/server/ok`).catch(() => undefined);
        return ok?.status === 200 ? true : undefined;
      },
      10_000,
      'nginx answering',
    );
  }, 120_000);

  afterAll(async () => {
    for (const stream of streams) stream.socket.terminate();
    if (nginx && nginx.exitCode === null) {
      const exited = new Promise((resolve) => nginx!.once('exit', resolve));
      nginx.kill('SIGQUIT');
      await exited;
    }
    for (const gw of gateways) await gw.stop().catch(() => undefined);
    await db?.end();
    await dropSchema(PG_URL, schema);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('serves instances held by either process and streams events across processes', async () => {
    const admin = gateways[0]!.adminKey;
    const instances: { id: string; token: string; number: string }[] = [];
    let held = new Map<string, TestGateway>();
    // Created and connected through nginx until both processes hold at least one instance.
    while (instances.length < 4 || new Set(instances.map((i) => held.get(i.id))).size < 2) {
      if (instances.length >= 16) throw new Error('16 instances and still not spread over both processes');
      const created = await api('POST', '/api/v1/instance/create', admin, { instanceName: uniqueName('lb'), network: 'sandbox' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const { instanceId: id, token } = created.body;
      const connect = await api('POST', '/api/v1/instance/connect', token);
      expect(connect.status, JSON.stringify(connect.body)).toBe(200);
      const number = uniqueNumber();
      // The process that takes the scan may not have seen the QR code yet (its copy of the
      // instance's status follows the holder's): it answers 409 until then, as it would a client.
      await waitFor(
        async () => ((await api('GET', '/api/v1/instance/status', token)).body.status === 'QRCODE' ? true : undefined),
        10_000,
        'the QR code shown',
      );
      const scan = await api('POST', '/api/v1/sandbox/scan', admin, { instanceId: id, number });
      expect(scan.status, JSON.stringify(scan.body)).toBe(200);
      const state = await api('GET', '/api/v1/instance/status', token);
      expect(state.status, JSON.stringify(state.body)).toBe(200);
      expect(state.body.status).toBe('CONNECTED');
      instances.push({ id, token, number });
      held = await waitFor(
        async () => {
          const map = await holders();
          return instances.every((i) => map.has(i.id)) ? map : undefined;
        },
        10_000,
        'every instance leased',
      );
    }
    for (const gw of gateways) expect(instances.some((i) => held.get(i.id) === gw)).toBe(true);

    // Sends for instances held by either process, each answered through nginx.
    for (const [index, from] of instances.entries()) {
      const to = instances[(index + 1) % instances.length]!;
      const sent = await api('POST', '/api/v1/send/text', from.token, { number: to.number, text: `through nginx ${index}` });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    }

    // A stream through nginx on the process that does not hold the instance receives its events.
    const [first, second] = gateways as [TestGateway, TestGateway];
    for (const [holder, other] of [
      [first, second],
      [second, first],
    ] as const) {
      const watched = instances.find((i) => held.get(i.id) === holder)!;
      const url = `${base.replace('http', 'ws')}/api/v1/ws?token=${watched.token}&instanceId=${watched.id}`;
      // nginx spreads upgrades over both processes: open until one lands on the other process.
      let stream: Stream | undefined;
      for (let attempt = 0; attempt < 8 && !stream; attempt += 1) {
        const before = { other: other.hub.count(watched.id), holder: holder.hub.count(watched.id) };
        const opened = await openStream(url);
        streams.push(opened);
        const landed = await waitFor(
          () =>
            other.hub.count(watched.id) > before.other ? 'other' : holder.hub.count(watched.id) > before.holder ? 'holder' : undefined,
          5_000,
          'the stream registered on a gateway',
        );
        if (landed === 'other') stream = opened;
      }
      expect(stream, 'a stream through nginx on the process not holding the instance').toBeDefined();
      const peer = instances.find((i) => i !== watched)!;
      const sent = await api('POST', '/api/v1/send/text', watched.token, { number: peer.number, text: 'seen across processes' });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const event = await waitFor(
        () => stream!.events.find((e) => e.event === 'SEND_MESSAGE' && e.data?.key?.id === sent.body.key.id),
        10_000,
        'the SEND_MESSAGE event on the stream',
      );
      expect(event.instanceId).toBe(watched.id);
    }

    // The admin stream upgrades through nginx too.
    const adminStream = await openStream(`${base.replace('http', 'ws')}/api/v1/admin/ws?token=${admin}`);
    streams.push(adminStream);
    expect(adminStream.socket.readyState).toBe(WebSocket.OPEN);
  }, 120_000);
});
