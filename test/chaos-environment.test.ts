/**
 * Chaos, the environment fails: a private PostgreSQL restarted under load (requests refused cleanly
 * meanwhile, nothing acknowledged lost), and a media folder that runs out of space. The gateway runs
 * as a child process; the parts are those of test/chaos.test.ts (test/support/chaos.ts).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { call, ChaoticReceiver, Deployment, Ledger, load, pair, REDIS_URL, settle } from './support/chaos.js';
import { waitFor } from './support/gateway.js';
import { makeSamples } from './support/media.js';
import { freePort } from './support/process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** A PostgreSQL of this test's own (its own data folder and port), which the test may restart. */
class PrivatePostgres {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-pg-'));
  port = 0;
  private readonly bin = `/usr/lib/postgresql/${fs.readdirSync('/usr/lib/postgresql').sort().at(-1)}/bin`;

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** Runs a server program as the postgres user (the server refuses to run as root). */
  private run(program: string, args: string[]): void {
    const quoted = [`${this.bin}/${program}`, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', quoted], { stdio: 'pipe' });
  }

  async init(): Promise<void> {
    this.port = await freePort();
    execFileSync('chown', ['postgres:postgres', this.root]);
    this.run('initdb', ['-D', `${this.root}/data`, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    this.start();
  }

  start(): void {
    this.run('pg_ctl', [
      '-D',
      `${this.root}/data`,
      '-l',
      `${this.root}/log`,
      '-w',
      '-o',
      `-p ${this.port} -k ${this.root} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  stop(): void {
    this.run('pg_ctl', ['-D', `${this.root}/data`, '-m', 'fast', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // already stopped
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * A deployment on `dataDir` with its webhook receiver and Redis reader, all stopped after the test;
 * `release` then frees the test's own failing resource, before `dataDir` is removed.
 */
function chaosParts(dataDir: string, release: () => void): { receiver: ChaoticReceiver; redis: Redis; deployment: Deployment } {
  const receiver = new ChaoticReceiver();
  const redis = new Redis(REDIS_URL);
  const deployment = new Deployment(dataDir, {});
  cleanups.push(async () => {
    await deployment.kill();
    await receiver.stop();
    await redis.del(`${deployment.prefix}events:stream`);
    redis.disconnect();
    release();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return { receiver, redis, deployment };
}

describe('chaos: the environment fails', () => {
  it(
    'a PostgreSQL restarted under load: refused cleanly meanwhile, served again after, nothing acknowledged lost',
    { timeout: 180_000 },
    async () => {
      const postgres = new PrivatePostgres();
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
      const { receiver, redis, deployment } = chaosParts(dataDir, () => postgres.destroy());
      await postgres.init();
      deployment.env.DATABASE_URL = postgres.url;
      await receiver.start();
      const png = (await makeSamples()).png.toString('base64');
      await deployment.start();
      deployment.supervise();
      const [a, b] = await pair(deployment, receiver);
      const ledger = new Ledger();

      let stopped = false;
      const running = load(deployment, a, b, ledger, png, () => stopped);
      await waitFor(() => (ledger.expected.size >= 50 ? true : undefined), 30_000, 'load before the restart');
      postgres.stop();
      const duringOutage = ledger.expected.size;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      postgres.start();
      // Back to work once the database is back (through a restarted process when it stepped down).
      await waitFor(() => (ledger.expected.size >= duringOutage + 50 ? true : undefined), 90_000, 'acknowledged sends after the restart');
      stopped = true;
      const statuses = await running;

      const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
      console.log(
        `chaos postgres restart: ${ledger.expected.size} acknowledged; process exits ${deployment.exits}; ` +
          `webhook lost ${webhook.lost}, duplicates ${webhook.duplicates}; stream lost ${stream.lost}; ` +
          `answers ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      // While the database was away requests were refused (503, or no process listening), never a 500.
      expect(statuses.get(500) ?? 0).toBe(0);
      expect(webhook.lost).toBe(0);
      expect(stream.lost).toBe(0);
    },
  );

  it(
    'the media folder runs out of space: sends and events go on, files that did not fit are 404, later ones are kept again',
    { timeout: 120_000 },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
      const mediaDir = path.join(dataDir, 'media');
      fs.mkdirSync(mediaDir);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mediaDir]);
      const { receiver, redis, deployment } = chaosParts(dataDir, () => execFileSync('umount', [mediaDir]));
      await receiver.start();
      await deployment.start();
      const [a, b] = await pair(deployment, receiver);
      // 40 pictures of ~55 KB: the 256 KB folder holds about four copies (sender's and recipient's).
      const picture = Buffer.concat([(await makeSamples()).png, randomBytes(55_000)]);
      const sendPicture = () =>
        call(deployment.url, 'POST', '/api/v1/send/media', { number: b.number, media: { base64: picture.toString('base64') } }, a.token);
      const ledger = new Ledger();
      const sent: string[] = [];
      for (let i = 0; i < 40; i += 1) {
        const res = await sendPicture();
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        ledger.add('SEND_MESSAGE', res.body.key.id);
        sent.push(res.body.key.id);
      }
      const text = await call(deployment.url, 'POST', '/api/v1/send/text', { number: b.number, text: 'still here' }, a.token);
      expect(text.status).toBe(200);
      ledger.add('SEND_MESSAGE', text.body.key.id);
      const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
      expect(webhook.lost).toBe(0);
      expect(stream.lost).toBe(0);

      const downloads = new Map<number, number>();
      for (const id of sent) {
        const res = await fetch(`${deployment.url}/api/v1/message/download/${id}`, { headers: { apikey: a.token } });
        await res.arrayBuffer();
        downloads.set(res.status, (downloads.get(res.status) ?? 0) + 1);
      }
      console.log(
        `chaos media folder full: 40 sends answered 200, 0 events lost; downloads ${JSON.stringify(Object.fromEntries(downloads))}`,
      );
      expect(downloads.get(200) ?? 0, 'the first pictures were kept').toBeGreaterThan(0);
      expect(downloads.get(404) ?? 0, 'the ones that did not fit are unknown, not a server error').toBeGreaterThan(0);
      expect([...downloads.keys()].every((status) => status === 200 || status === 404)).toBe(true);
      expect((await call(deployment.url, 'GET', '/api/v1/server/ok')).status).toBe(200);

      // Room again: the next picture is kept and served.
      execFileSync('mount', ['-o', 'remount,size=8m', mediaDir]);
      const again = await sendPicture();
      expect(again.status).toBe(200);
      await waitFor(
        async () => {
          const res = await fetch(`${deployment.url}/api/v1/message/download/${again.body.key.id}`, { headers: { apikey: a.token } });
          const bytes = Buffer.from(await res.arrayBuffer());
          return res.status === 200 && bytes.equals(picture) ? true : undefined;
        },
        15_000,
        'the picture sent once there was room',
      );
    },
  );
});
