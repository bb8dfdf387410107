/**
 * RabbitMQ channel against the machine's RabbitMQ (127.0.0.1:5672). Names carry a prefix unique to
 * this run; the queues and exchange are deleted at the end. Failures are made from the server side
 * (rabbitmqctl close_connection) and by a port where no broker listens yet (a TCP proxy started late).
 */
import { randomBytes } from 'node:crypto';
import { Connection, type AsyncMessage, type Consumer, type SyncMessage } from 'rabbitmq-client';
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
import { loadConfig } from '../../config.js';
import { AmqpSink, amqpNames, amqpQueueArguments } from './amqp.js';

const RABBIT_URL = process.env.TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
/** The queue limits of the default settings (the gateways below run with them unless a test says otherwise). */
const DEFAULT_LIMITS = loadConfig({}).channels.queueLimits;

interface Received {
  message: AsyncMessage;
  envelope: any;
}

/** rabbitmq-client hands application/json bodies over parsed; other clients get the bytes. */
function envelopeOf(message: AsyncMessage | SyncMessage): any {
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

  /** Consumes a durable queue (declared here too, with the gateway's default arguments) into an array. */
  function consume(queue: string, kind: 'global' | 'instance'): Received[] {
    const received: Received[] = [];
    queues.push(queue);
    const queueOptions = { durable: true, arguments: amqpQueueArguments(DEFAULT_LIMITS, kind) };
    const consumer = rabbit.createConsumer({ queue, queueOptions, qos: { prefetchCount: 200 } }, (message) => {
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

      const global = consume(names.globalQueue, 'global');
      const ofA = consume(names.instanceQueue(a.id), 'instance');
      const ofB = consume(names.instanceQueue(b.id), 'instance');
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
      queues.push(amqpNames(prefix).instanceQueue(a.id));
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

      const global = consume(amqpNames(prefix).globalQueue, 'global');
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

  /** The `n` of each message left in a queue, oldest first (the queue is emptied). */
  async function drain(queue: string): Promise<number[]> {
    const left: number[] = [];
    for (;;) {
      const message = await rabbit.basicGet({ queue, noAck: true });
      if (!message) return left;
      left.push(envelopeOf(message).data.n);
    }
  }

  /** Declaring with `args` succeeds only when the queue has exactly these arguments (RabbitMQ's equivalence check). */
  async function declaredWith(queue: string, args: Record<string, unknown>): Promise<{ messageCount: number } | string> {
    try {
      return await rabbit.queueDeclare({ queue, durable: true, arguments: args });
    } catch (error) {
      return (error as { code?: string }).code ?? String(error);
    }
  }

  it(
    'declares the global and per-instance queues with the configured limits; at x-max-length the oldest go',
    { timeout: 30_000 },
    async () => {
      const prefix = newPrefix();
      const names = amqpNames(prefix);
      const env = {
        QUEUE_BROKER_URL: RABBIT_URL,
        QUEUE_BROKER_PREFIX: prefix,
        QUEUE_BROKER_MESSAGE_TTL_SECONDS: '3600',
        QUEUE_BROKER_GLOBAL_MAX_LENGTH: '4',
        QUEUE_BROKER_GLOBAL_MAX_BYTES: '0',
        QUEUE_BROKER_INSTANCE_MAX_LENGTH: '3',
        QUEUE_BROKER_INSTANCE_MAX_BYTES: '1048576',
        ...FAST_RETRY,
      };
      const gw = await startGateway({ env });
      gateways.push(gw);
      const a = await createInstance(gw);
      queues.push(names.globalQueue, names.instanceQueue(a.id));
      await publishBurst(gw, [a.id], 5, { chunk: 1 });
      await waitFor(async () => ((await pendingFor(gw, 'amqp')).rows === 0 ? true : undefined), 15_000, 'outbox drained');

      const limits = gw.config.channels.queueLimits;
      expect(amqpQueueArguments(limits, 'global')).toEqual({ 'x-message-ttl': 3_600_000, 'x-max-length': 4, 'x-overflow': 'drop-head' });
      expect(amqpQueueArguments(limits, 'instance')).toEqual({
        'x-message-ttl': 3_600_000,
        'x-max-length': 3,
        'x-max-length-bytes': 1_048_576,
        'x-overflow': 'drop-head',
      });
      // The broker holds each queue with exactly these arguments: the same declaration is accepted, others are not.
      expect(await declaredWith(names.globalQueue, amqpQueueArguments(limits, 'global'))).toMatchObject({ messageCount: 4 });
      expect(await declaredWith(names.instanceQueue(a.id), amqpQueueArguments(limits, 'instance'))).toMatchObject({ messageCount: 3 });
      expect(await declaredWith(names.instanceQueue(a.id), {})).toBe('PRECONDITION_FAILED');
      // Five events went out; each queue kept the newest it may hold.
      expect(await drain(names.globalQueue)).toEqual([1, 2, 3, 4]);
      expect(await drain(names.instanceQueue(a.id))).toEqual([2, 3, 4]);
    },
  );

  it('warns once about a queue declared with other arguments and keeps publishing to it', { timeout: 45_000 }, async () => {
    const prefix = newPrefix();
    const names = amqpNames(prefix);
    // A consumer (or an older gateway) declared the global queue first, with a limit of its own.
    await rabbit.queueDeclare({ queue: names.globalQueue, durable: true, arguments: { 'x-max-length': 7 } });
    queues.push(names.globalQueue);
    const logs = { level: 'debug' as const, lines: [] as string[] };
    const gw = await startGateway({ env: { QUEUE_BROKER_URL: RABBIT_URL, QUEUE_BROKER_PREFIX: prefix, ...FAST_RETRY }, logs });
    gateways.push(gw);
    const a = await createInstance(gw);
    queues.push(names.instanceQueue(a.id));
    const warnings = () =>
      logs.lines.map((line) => JSON.parse(line)).filter((line) => line.level === 40 && line.queue === names.globalQueue);

    await publishBurst(gw, [a.id], 5, { chunk: 1 });
    await waitFor(async () => ((await pendingFor(gw, 'amqp')).rows === 0 ? true : undefined), 15_000, 'outbox drained');
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0].msg).toMatch(new RegExp(`amqp queue ${names.globalQueue.replace(/\./g, '\\.')} exists with other arguments`));
    expect(warnings()[0].reason).toMatch(/PRECONDITION_FAILED.*inequivalent arg/);

    // A new connection declares again: no second warning, and events still arrive.
    expect(await closeRabbitConnections(prefix)).toBeGreaterThanOrEqual(1);
    await publishBurst(gw, [a.id], 5, { chunk: 1 });
    await waitFor(async () => ((await pendingFor(gw, 'amqp')).rows === 0 ? true : undefined), 20_000, 'outbox drained again');
    expect(warnings()).toHaveLength(1);
    expect(logs.lines.some((line) => /"queue":"[^"]+\.global".*used as it is/.test(line))).toBe(true);
    await waitFor(async () => ((await channelHealth(gw, 'amqp'))?.up ? true : undefined), 15_000, 'amqp up');
    // The queue keeps its own limit (7 of the 10 events); the instance's queue got the configured arguments.
    expect(await declaredWith(names.globalQueue, { 'x-max-length': 7 })).toMatchObject({ messageCount: 7 });
    expect(await declaredWith(names.instanceQueue(a.id), amqpQueueArguments(DEFAULT_LIMITS, 'instance'))).toMatchObject({
      messageCount: 10,
    });
    expect(await drain(names.globalQueue)).toEqual([3, 4, 0, 1, 2, 3, 4]);
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
      limits: DEFAULT_LIMITS,
    });
    // A publisher whose confirms never come: close() must not wait for it without end.
    (sink as unknown as { publisher: { close(): Promise<void> } }).publisher = { close: () => new Promise<void>(() => undefined) };
    const started = Date.now();
    await sink.close();
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
