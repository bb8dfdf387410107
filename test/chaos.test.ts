/**
 * Chaos: the gateway as a child process, killed with SIGKILL at random moments while it takes
 * sends (text and media), receives messages (text from contacts, media from another instance), and
 * delivers to a webhook receiver that answers 5xx, times out and resets connections, and to the
 * Redis stream; on SQLite and PostgreSQL. Counted: events lost (must be 0) and duplicates (reported,
 * bounded). CHAOS_ROUNDS kills per database (default 2 in the test command; `npm run chaos` runs 12).
 * The environment failing (PostgreSQL restarted, media folder full): test/chaos-environment.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import { ChaoticReceiver, Deployment, Ledger, load, pair, REDIS_URL, settle } from './support/chaos.js';
import { newSchemaName, PG_URL, waitFor, type DialectName } from './support/gateway.js';
import { makeSamples } from './support/media.js';

const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? 2);

function databaseOf(dialect: DialectName, schema: string): Record<string, string> {
  return dialect === 'postgres' ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : {};
}

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.each<DialectName>(['sqlite', 'postgres'])('chaos on %s', (dialect) => {
  it(`loses no acknowledged event over ${ROUNDS} SIGKILLs at random moments`, { timeout: 180_000 + ROUNDS * 75_000 }, async () => {
    const receiver = new ChaoticReceiver();
    await receiver.start();
    const redis = new Redis(REDIS_URL);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chaos-'));
    const schema = newSchemaName();
    const deployment = new Deployment(dataDir, databaseOf(dialect, schema));
    cleanups.push(async () => {
      await deployment.kill();
      await receiver.stop();
      await redis.del(`${deployment.prefix}events:stream`);
      redis.disconnect();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const png = (await makeSamples()).png.toString('base64');
    await deployment.start();
    const [a, b] = await pair(deployment, receiver);
    const ledger = new Ledger();
    const statuses = new Map<number, number>();
    for (let round = 0; round < ROUNDS; round += 1) {
      // A random moment: after some acknowledged work, within a second and a half of load.
      const killAt = Date.now() + 300 + Math.random() * 1_200;
      const before = ledger.expected.size;
      let killed = false;
      const running = load(deployment, a, b, ledger, png, () => killed);
      await waitFor(() => (Date.now() >= killAt && ledger.expected.size > before ? true : undefined), 30_000, 'load before the kill');
      await deployment.kill();
      killed = true;
      for (const [status, count] of await running) statuses.set(status, (statuses.get(status) ?? 0) + count);
      await deployment.start();
    }
    // A last stretch of load on the restarted process, then everything must arrive.
    let done = false;
    const tail = load(deployment, a, b, ledger, png, () => done);
    await waitFor(() => (ledger.expected.size > 0 ? true : undefined), 10_000, 'load after the last restart');
    done = true;
    await tail;
    const { webhook, stream } = await settle(receiver, redis, deployment.prefix, ledger);
    console.log(
      `chaos ${dialect}: ${ROUNDS} kills, ${ledger.expected.size} acknowledged events; ` +
        `webhook delivered ${webhook.delivered}, lost ${webhook.lost}, duplicates ${webhook.duplicates} (max ${webhook.maxCopies} copies); ` +
        `redis stream delivered ${stream.delivered}, lost ${stream.lost}, max ${stream.maxCopies} entries per event; ` +
        `receiver faults ${JSON.stringify(receiver.faults)}; answers ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
    expect(statuses.get(500) ?? 0, 'no 500 answers').toBe(0);
    expect(webhook.lost).toBe(0);
    expect(stream.lost).toBe(0);
    // At least once, not unboundedly often: a kill or a receiver fault may repeat an event a few times.
    expect(webhook.maxCopies).toBeLessThanOrEqual(ROUNDS + 8);
    expect(webhook.duplicates).toBeLessThanOrEqual(webhook.acknowledged);
    expect(stream.maxCopies).toBeLessThanOrEqual(ROUNDS + 8);
    // One event, one eventId: a redelivered event carries its first eventId.
    for (const key of ledger.expected) expect(receiver.byMessage.get(key)?.size, key).toBe(1);
  });
});
