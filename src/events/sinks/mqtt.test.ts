/**
 * MQTT channel against a private mosquitto (persistence on, so sessions and queued QoS 1 messages
 * survive its restart), stopped and started again mid-burst; unreachable at start; and as the relay
 * of live events between two gateway processes.
 */
import { randomBytes } from 'node:crypto';
import { connect, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInstance, startGateway, waitFor } from '../../../test/support/gateway.js';
import {
  channelHealth,
  distinctCount,
  expectRelayAcrossProcesses,
  expectEveryEventInOrder,
  freePort,
  pendingFor,
  privateMosquitto,
  publishBurst,
  type BrokerProcess,
  FAST_RETRY,
  uniquePrefix,
} from '../../../test/support/brokers.js';
import { mqttNames } from './mqtt.js';

function mqttEnv(broker: BrokerProcess, prefix: string): Record<string, string> {
  return { LIGHT_BROKER_URL: `mqtt://${broker.url}`, LIGHT_BROKER_PREFIX: prefix, ...FAST_RETRY };
}

interface Received {
  topic: string;
  userProperties: Record<string, string | string[]> | undefined;
  envelope: any;
}

/**
 * A consumer with a persistent session (clean start off, session kept 5 minutes), so the broker
 * queues QoS 1 messages for it while it is away, also across the broker's restart.
 */
async function subscriber(
  broker: BrokerProcess,
  filter: string,
): Promise<{ client: MqttClient; received: Received[]; sessionsPresent: boolean[] }> {
  const received: Received[] = [];
  // Whether the broker still had the session at each (re)connect: a failure report needs it.
  const sessionsPresent: boolean[] = [];
  const client = connect(`mqtt://${broker.url}`, {
    protocolVersion: 5,
    clientId: `wgtest-${randomBytes(4).toString('hex')}`,
    clean: false,
    properties: { sessionExpiryInterval: 300 },
    reconnectPeriod: 200,
  });
  client.on('error', () => undefined);
  client.on('connect', (connack) => sessionsPresent.push(connack.sessionPresent));
  client.on('message', (topic, payload, packet) => {
    received.push({ topic, userProperties: packet.properties?.userProperties, envelope: JSON.parse(payload.toString('utf8')) });
  });
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  await client.subscribeAsync(filter, { qos: 1 });
  return { client, received, sessionsPresent };
}

describe('MQTT channel', () => {
  let broker: BrokerProcess;
  const clients: MqttClient[] = [];

  beforeAll(async () => {
    broker = await privateMosquitto();
    await broker.start();
  });
  afterAll(async () => {
    for (const client of clients) await client.endAsync(true).catch(() => undefined);
    await broker.dispose();
  });

  it('delivers a burst of 1,000 with QoS 1 in per-instance order across a broker restart', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix();
    const names = mqttNames(prefix);
    const gw = await startGateway({ env: mqttEnv(broker, prefix) });
    try {
      const a = await createInstance(gw);
      const b = await createInstance(gw);
      await waitFor(async () => ((await channelHealth(gw, 'mqtt'))?.up ? true : undefined), 15_000, 'mqtt channel up');
      const all = await subscriber(broker, names.globalWildcard);
      const ofA = await subscriber(broker, names.instanceWildcard(a.id));
      clients.push(all.client, ofA.client);
      const envelopes = () => all.received.map((r) => r.envelope);

      const burst = publishBurst(gw, [a.id, b.id], 1000, { chunk: 25, gapMs: 40 });
      await waitFor(() => (distinctCount(envelopes()) >= 250 ? true : undefined), 30_000, '250 events');
      await broker.stop();
      expect(distinctCount(envelopes())).toBeLessThan(1000);
      await waitFor(async () => ((await channelHealth(gw, 'mqtt'))?.up === false ? true : undefined), 10_000, 'mqtt reported down');
      await waitFor(async () => ((await pendingFor(gw, 'mqtt')).maxAttempts >= 1 ? true : undefined), 20_000, 'failed attempts');
      await broker.start();
      await burst;
      // The consumers' sessions must come back from the broker's store: without them, whatever the
      // gateway republishes before a consumer resubscribes matches no one and is gone (PUBACK 16).
      await waitFor(() => (all.client.connected && ofA.client.connected ? true : undefined), 20_000, 'consumers back');
      expect(all.sessionsPresent).toEqual([false, true]);
      expect(ofA.sessionsPresent).toEqual([false, true]);
      expect(broker.logLines(/Error saving/)).toEqual([]);

      // Should this time out, say where the events stopped (it did when the broker could not save its
      // sessions: events republished before the consumers resubscribed were acknowledged as unmatched).
      await waitFor(() => (distinctCount(envelopes()) === 1000 ? true : undefined), 40_000, 'all 1,000 events').catch(async (error) => {
        const where = {
          received: distinctCount(envelopes()),
          pending: await pendingFor(gw, 'mqtt'),
          mqtt: await channelHealth(gw, 'mqtt'),
          // The gateway held an acknowledgement for every event in the last failure (0 pending): did
          // the broker drop some, or acknowledge them as matching no subscriber (reason 16)?
          brokerDrops: broker.logLines(/dropped|rc16|rc=16|expired|Restored|Saving/i).slice(-20),
        };
        throw new Error(`${(error as Error).message}: ${JSON.stringify(where)}`);
      });
      // Also seen once in a slow CI run (the global subscriber had all 1,000): say what a's lacks.
      const ofAEnvelopes = () => ofA.received.map((r) => r.envelope);
      await waitFor(() => (distinctCount(ofAEnvelopes()) === 500 ? true : undefined), 20_000, "all of a's events").catch((error) => {
        const seen = new Set(ofAEnvelopes().map((e) => e.data.n as number));
        const missing = Array.from({ length: 500 }, (_, n) => n).filter((n) => !seen.has(n));
        const where = {
          received: seen.size,
          missing: missing.length > 20 ? [...missing.slice(0, 10), '…', ...missing.slice(-10)] : missing,
          sessionsPresent: ofA.sessionsPresent,
          connected: ofA.client.connected,
          globalSessionsPresent: all.sessionsPresent,
        };
        throw new Error(`${(error as Error).message}: ${JSON.stringify(where)}`);
      });
      expectEveryEventInOrder(
        envelopes(),
        new Map([
          [a.id, 500],
          [b.id, 500],
        ]),
      );
      expectEveryEventInOrder(
        ofA.received.map((r) => r.envelope),
        new Map([[a.id, 500]]),
      );
      await waitFor(async () => ((await pendingFor(gw, 'mqtt')).rows === 0 ? true : undefined), 10_000, 'outbox drained');

      const first = all.received.find((r) => r.envelope.instanceId === b.id)!;
      expect(first.topic).toBe(names.topic(b.id, 'MESSAGE'));
      expect(first.userProperties).toEqual({ eventId: first.envelope.eventId, event: 'MESSAGE', instanceId: b.id });
      const stored = await gw.storage.db
        .selectFrom('outbox')
        .select('body')
        .where('event_id', '=', first.envelope.eventId)
        .executeTakeFirstOrThrow();
      expect(JSON.stringify(first.envelope)).toBe(stored.body);
    } finally {
      await gw.stop();
    }
  });

  it('starts with the broker unreachable, reports the channel down, keeps retrying and loses nothing', { timeout: 60_000 }, async () => {
    const late = await privateMosquitto(await freePort());
    const prefix = uniquePrefix();
    // The consumer's persistent session is made first (and kept on disk while the broker is
    // away), so the broker queues events for it whichever of the two reconnects first.
    await late.start();
    const all = await subscriber(late, mqttNames(prefix).globalWildcard);
    clients.push(all.client);
    await late.stop();
    const gw = await startGateway({ env: mqttEnv(late, prefix) });
    try {
      const a = await createInstance(gw);
      const health = await waitFor(
        async () => {
          const h = await channelHealth(gw, 'mqtt');
          return h && !h.up && h.detail !== 'connecting' ? h : undefined;
        },
        15_000,
        'mqtt reported down with a reason',
      );
      expect(health.detail).toMatch(/ECONNREFUSED|disconnected/);

      await publishBurst(gw, [a.id], 20);
      await waitFor(async () => ((await pendingFor(gw, 'mqtt')).maxAttempts >= 2 ? true : undefined), 20_000, 'repeated attempts');
      expect((await pendingFor(gw, 'mqtt')).rows).toBe(20);

      await late.start();
      await waitFor(() => (distinctCount(all.received.map((r) => r.envelope)) === 20 ? true : undefined), 30_000, 'the 20 stored events');
      expect(all.sessionsPresent).toEqual([false, true]);
      expectEveryEventInOrder(
        all.received.map((r) => r.envelope),
        new Map([[a.id, 20]]),
      );
      await waitFor(async () => ((await channelHealth(gw, 'mqtt'))?.up ? true : undefined), 10_000, 'mqtt reported up');
      await waitFor(async () => ((await pendingFor(gw, 'mqtt')).rows === 0 ? true : undefined), 10_000, 'outbox drained');
    } finally {
      await gw.stop();
      await late.dispose();
    }
  });

  it('relays live events between gateway processes (WebSocket on B, instance on A)', async () => {
    await expectRelayAcrossProcesses(mqttEnv(broker, uniquePrefix()));
  });
});
