/**
 * RabbitMQ channel against the machine's RabbitMQ (127.0.0.1:5672). Names carry a prefix unique to
 * this run; the queues and exchange are deleted at the end. Failures are made from the server side
 * (rabbitmqctl close_connection) and by a port where no broker listens yet (a TCP proxy started late).
 */
import { randomBytes } from 'node:crypto';
import { Connection, type AsyncMessage, type Consumer } from 'rabbitmq-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, startGateway, waitFor, type TestGateway } from '../../../test/support/gateway.js';
import {
  channelHealth,
  closeRabbitConnections,
  distinctCount,
  expectEveryEventInOrder,
  freePort,
  pendingFor,
  publishBurst,
  TcpProxy,
  FAST_RETRY,
} from '../../../test/support/brokers.js';
import { pino } from 'pino';
import { AmqpSink, amqpNames } from './amqp.js';

const RABBIT_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

interface Received {
  message: AsyncMessage;
  envelope: any;
}

/** rabbitmq-client hands application/json bodies over parsed; other clients get the bytes. */
function envelopeOf(message: AsyncMessage): any {
  const body: unknown = message.body;
  if (Buffer.isBuffer(body)) return JSON.parse(body.toString('utf8'));
  return typeof body === 'string' ? JSON.parse(body) : body;
}

describe('RabbitMQ channel', () => {
  const rabbit = new Connection({ url: RABBIT_URL, connectionName: 'waygate test consumer' });
  rabbit.on('error', () => undefined);
  const consumers: Consumer[] = [];
  const prefixes: string[] = [];
  const queues: string[] = [];
  const gateways: TestGateway[] = [];

  function newPrefix(): string {
    const prefix = `wgtest-${process.pid}-${randomBytes(3).toString('hex')}`;
    prefixes.push(prefix);
    return prefix;
  }

  /** Consumes a durable queue (declared here too, with the gateway's arguments) into an array. */
  function consume(queue: string): Received[] {
    const received: Received[] = [];
    queues.push(queue);
    const consumer = rabbit.createConsumer({ queue, queueOptions: { durable: true }, qos: { prefetchCount: 200 } }, (message) => {
      received.push({ message, envelope: envelopeOf(message) });
    });
    consumer.on('error', () => undefined);
    consumers.push(consumer);
    return received;
  }

  beforeAll(async () => {
    await rabbit.onConnect(10_000);
  });

  afterAll(async () => {
    for (const gw of gateways) await gw.stop();
    for (const consumer of consumers) await consumer.close();
    for (const queue of queues) await rabbit.queueDelete({ queue }).catch(() => undefined);
    for (const prefix of prefixes) await rabbit.exchangeDelete({ exchange: amqpNames(prefix).exchange }).catch(() => undefined);
    await rabbit.close();
  });

  it(
    'delivers a burst of 1,000 to the global and per-instance queues in order, across a server-side connection close',
    { timeout: 60_000 },
    async () => {
      const prefix = newPrefix();
      const names = amqpNames(prefix);
      const gw = await startGateway({ env: { QUEUE_BROKER_URL: RABBIT_URL, QUEUE_BROKER_PREFIX: prefix, ...FAST_RETRY } });
      gateways.push(gw);
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      await waitFor(async () => ((await channelHealth(gw, 'amqp'))?.up ? true : undefined), 15_000, 'amqp channel up');

      const global = consume(names.globalQueue);
      const ofA = consume(names.instanceQueue(a.id));
      const ofB = consume(names.instanceQueue(b.id));
      await waitFor(() => (consumers.every((c) => c.consumerTag) ? true : undefined), 10_000, 'consumers ready');

      const burst = publishBurst(gw, [a.id, b.id], 1000, { chunk: 25, gapMs: 40 });
      await waitFor(() => (distinctCount(global.map((r) => r.envelope)) >= 250 ? true : undefined), 30_000, '250 events');
      expect(distinctCount(global.map((r) => r.envelope))).toBeLessThan(1000);
      expect(await closeRabbitConnections(prefix)).toBeGreaterThanOrEqual(1);
      await burst;

      await waitFor(
        () => (distinctCount(global.map((r) => r.envelope)) === 1000 ? true : undefined),
        40_000,
        'all 1,000 on the global queue',
      );
      await waitFor(
        () => (distinctCount(ofA.map((r) => r.envelope)) === 500 && distinctCount(ofB.map((r) => r.envelope)) === 500 ? true : undefined),
        20_000,
        'all events on the instance queues',
      );
      const perInstance = new Map([
        [a.id, 500],
        [b.id, 500],
      ]);
      expectEveryEventInOrder(
        global.map((r) => r.envelope),
        perInstance,
      );
      expectEveryEventInOrder(
        ofA.map((r) => r.envelope),
        new Map([[a.id, 500]]),
      );
      expectEveryEventInOrder(
        ofB.map((r) => r.envelope),
        new Map([[b.id, 500]]),
      );
      await waitFor(async () => ((await pendingFor(gw, 'amqp')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
      // The server-side close may come after the last publish; the client reconnects on its own.
      await waitFor(async () => ((await channelHealth(gw, 'amqp'))?.up ? true : undefined), 15_000, 'amqp reconnected');
      const metrics = await (await fetch(`${gw.url}/metrics`)).text();
      expect(metrics).toMatch(/^waygate_channel_up\{channel="amqp"\} 1$/m);

      // The body is the webhook's envelope (JSON, same fields and order); properties carry id, type and persistence.
      const first = global.find((r) => r.envelope.instanceId === a.id)!;
      const stored = await gw.storage.db
        .selectFrom('outbox')
        .select('body')
        .where('event_id', '=', first.envelope.eventId)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(first.envelope)).toBe(stored.body);
      expect(first.message).toMatchObject({
        exchange: names.exchange,
        routingKey: `${a.id}.MESSAGE`,
        messageId: first.envelope.eventId,
        type: 'MESSAGE',
        contentType: 'application/json',
        durable: true,
        headers: { 'x-event-id': first.envelope.eventId, 'x-event': 'MESSAGE', 'x-instance-id': a.id, 'x-instance-name': a.name },
      });
      expect(first.envelope).toMatchObject({ event: 'MESSAGE', instanceId: a.id, instanceName: a.name, data: { n: 0 } });
    },
  );

  it('starts with an unreachable broker, reports the channel down, keeps retrying and loses nothing', { timeout: 60_000 }, async () => {
    const prefix = newPrefix();
    const port = await freePort();
    const proxy = new TcpProxy(port, Number(new URL(RABBIT_URL).port || 5672));
    const url = new URL(RABBIT_URL);
    url.port = String(port);
    const gw = await startGateway({ env: { QUEUE_BROKER_URL: url.toString(), QUEUE_BROKER_PREFIX: prefix, ...FAST_RETRY } });
    gateways.push(gw);
    try {
      const a = await createInstance(gw);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'amqp');
          return h && !h.up && h.detail !== 'connecting' ? h : undefined;
        },
        15_000,
        'amqp reported down with a reason',
      );
      expect(health.detail).toMatch(/ECONNREFUSED|connect/i);
      expect(await (await fetch(`${gw.url}/metrics`)).text()).toMatch(/^waygate_channel_up\{channel="amqp"\} 0$/m);

      await publishBurst(gw, [a.id], 20);
      // Attempts keep being made (and recorded) while nothing listens.
      await waitFor(async () => ((await pendingFor(gw, 'amqp')).maxAttempts >= 2 ? true : undefined), 20_000, 'repeated attempts');
      expect((await pendingFor(gw, 'amqp')).rows).toBe(20);

      const global = consume(amqpNames(prefix).globalQueue);
      await proxy.start();
      await waitFor(() => (distinctCount(global.map((r) => r.envelope)) === 20 ? true : undefined), 40_000, 'the 20 stored events');
      expectEveryEventInOrder(
        global.map((r) => r.envelope),
        new Map([[a.id, 20]]),
      );
      await waitFor(async () => ((await channelHealth(gw, 'amqp'))?.up ? true : undefined), 10_000, 'amqp reported up');
      await waitFor(async () => ((await pendingFor(gw, 'amqp')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
    } finally {
      await gw.stop();
      gateways.splice(gateways.indexOf(gw), 1);
      await proxy.stop();
    }
  });
});

describe('RabbitMQ channel shutdown', () => {
  it('closes within its time limit even when the broker never confirms what is outstanding', async () => {
    const port = await freePort();
    const sink = new AmqpSink({
      url: `amqp://guest:guest@127.0.0.1:${port}`,
      prefix: `wg-close-${randomBytes(3).toString('hex')}`,
      connectionName: 'waygate close test',
      retry: { maxAttempts: null, baseDelayMs: 100, maxDelayMs: 1000 },
      publishTimeoutMs: 500,
      log: pino({ level: 'silent' }),
      closeTimeoutMs: 300,
    });
    // A publisher whose confirms never come: close() must not wait for it without end.
    (sink as unknown as { publisher: { close(): Promise<void> } }).publisher = { close: () => new Promise<void>(() => undefined) };
    const started = Date.now();
    await sink.close();
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
