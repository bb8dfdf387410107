// Many instances in one gateway process (not cluster mode): BENCH_MANY_INSTANCES (1,000) connected
// sandbox instances, each with a webhook for SEND_MESSAGE, on SQLite and on PostgreSQL; the send
// load of bench/cluster-load.mjs (64 connections, each request with a random instance's token) for
// BENCH_MANY_SECONDS (15). The baseline is the same load, same generator, on one instance with the
// same webhook, in the same run: what holding many instances (a lane per instance, ticks over many
// instances) costs a gateway. Every send's event must reach the receiver (`lost` after a drain).
import { execSync } from 'node:child_process';
import { WebhookReceiverForBench } from './receiver.mjs';
import { connectedSandbox, emit, startGateway, tokenLoad } from './lib.mjs';

const QUICK = process.env.BENCH_QUICK === '1';
const INSTANCES = Number(process.env.BENCH_MANY_INSTANCES ?? (QUICK ? 200 : 1000));
const SECONDS = Number(process.env.BENCH_MANY_SECONDS ?? (QUICK ? 4 : 15));
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LINK_CONCURRENCY = 32;

const ratio = (a, b) => (b ? Math.round((a / b) * 1000) / 1000 : null);

/** One gateway on `env` with `count` instances under the load: sends/s, latency, deliveries. */
async function configuration(env, count) {
  const receiver = new WebhookReceiverForBench();
  await receiver.start();
  const gateway = await startGateway(env);
  try {
    const instances = [];
    let next = 0;
    const linkStarted = performance.now();
    await Promise.all(
      Array.from({ length: Math.min(LINK_CONCURRENCY, count) }, async () => {
        while (next < count) {
          next += 1;
          instances.push(await connectedSandbox(gateway.url, { webhookUrl: receiver.url, webhookEvents: ['SEND_MESSAGE'] }));
        }
      }),
    );
    const linkMs = Math.round(performance.now() - linkStarted);
    const before = receiver.uniqueIds.size;
    const sent = await tokenLoad({
      ports: [gateway.port],
      instances: instances.map((i) => ({ token: i.token, port: gateway.port })),
      connections: 64,
      duration: SECONDS,
      number: '5511900000000',
    });
    const deliveredDuringLoad = receiver.uniqueIds.size - before;
    // Drain: until every send's event arrived, or nothing new for 3 s (60 s at most).
    const drainStarted = Date.now();
    const delivered = await receiver.drain(before, sent.total2xx, { maxMs: 60_000 });
    return {
      instances: count,
      linkMs,
      requestsPerSec: sent.requestsPerSec,
      p50Ms: sent.p50Ms,
      p99Ms: sent.p99Ms,
      errors: sent.errors,
      sends: sent.total2xx,
      deliveredDuringLoad,
      drainMs: Date.now() - drainStarted,
      lost: Math.max(0, sent.total2xx - delivered),
      seqGaps: receiver.seqGaps,
      outOfOrder: receiver.outOfOrder,
    };
  } finally {
    await gateway.stop();
    await receiver.stop();
    if (env.DATABASE_SCHEMA) execSync(`psql "${PG_URL}" -qc 'drop schema if exists ${env.DATABASE_SCHEMA} cascade'`, { stdio: 'ignore' });
  }
}

export async function manyInstancesBench(results) {
  for (const [database, env] of [
    ['sqlite', {}],
    ['postgres', { DATABASE_URL: PG_URL, DATABASE_SCHEMA: `bench_many_${Date.now()}` }],
  ]) {
    console.error(`many instances: ${database}, 1 then ${INSTANCES} instances...`);
    const one = await configuration(database === 'postgres' ? { ...env, DATABASE_SCHEMA: `${env.DATABASE_SCHEMA}_1` } : env, 1);
    const many = await configuration(env, INSTANCES);
    emit(results, {
      figure: `many_instances_${database}`,
      unit: `POST /send/text over ${INSTANCES} instances' tokens, each with a webhook, one process`,
      many,
      baseline: { name: 'the same load on one instance (same generator, same run)', ...one },
      ratio: ratio(many.requestsPerSec, one.requestsPerSec),
    });
  }
}
