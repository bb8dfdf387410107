/**
 * Cluster mode with three gateway processes' worth of gateways (in this test process) on one
 * PostgreSQL schema and one Redis: instances spread over them, any gateway answers for any
 * instance, two instances held by different gateways talk to each other, and a gateway that leaves
 * hands its instances over to the others without losing an event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterEnv,
  connectedInstance,
  startCluster,
  uniqueNumber,
  waitFor,
  type TestCluster,
  type TestGateway,
  type TestInstance,
} from './support/gateway.js';
import { WebhookReceiver } from './support/receiver.js';

const env = clusterEnv({ BATCH_MIN_INTERVAL_MS: '50' });

describe('cluster mode: every process active on one PostgreSQL and Redis', () => {
  let cluster: TestCluster;
  let gateways: TestGateway[];
  const receiver = new WebhookReceiver();
  const owners = () => cluster.owners();

  beforeAll(async () => {
    await receiver.start();
    cluster = await startCluster(3, env);
    gateways = cluster.gateways;
  }, 60_000);

  afterAll(async () => {
    await cluster.stop();
    await receiver.stop();
  }, 60_000);

  it('spreads instances, answers for any instance anywhere, and hands over cleanly when a process leaves', async () => {
    const instances: TestInstance[] = [];
    for (let i = 0; i < 24; i += 1) {
      instances.push(
        await connectedInstance(gateways[i % 3]!, uniqueNumber(), { webhookUrl: receiver.url, webhookEvents: ['MESSAGE', 'SEND_MESSAGE'] }),
      );
    }
    // Every instance is leased, by more than one process.
    const held = await waitFor(
      async () => {
        const map = await owners();
        return instances.every((i) => map.get(i.id)) ? map : undefined;
      },
      10_000,
      'every instance leased',
    );
    const counts = new Map<string, number>();
    for (const i of instances) counts.set(held.get(i.id)!, (counts.get(held.get(i.id)!) ?? 0) + 1);
    expect(counts.size).toBe(3);

    // Sends through every gateway, between instances held by different processes.
    const sent: string[] = [];
    for (let i = 0; i < instances.length; i += 1) {
      const from = instances[i]!;
      const to = instances[(i + 1) % instances.length]!;
      const res = await gateways[(i + 2) % 3]!.api('POST', '/api/v1/send/text', {
        key: from.token,
        body: { number: to.number, text: `hello ${i}` },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      sent.push(res.body.key.id);
    }
    const received = (id: string, type: string) => receiver.requests.filter((r) => r.json?.event === type && r.json?.data?.key?.id === id);
    await waitFor(
      () => (sent.every((id) => received(id, 'SEND_MESSAGE').length > 0 && received(id, 'MESSAGE').length > 0) ? true : undefined),
      15_000,
      'every send and its receipt delivered',
    );
    for (const id of sent) {
      expect(received(id, 'SEND_MESSAGE')).toHaveLength(1);
      expect(received(id, 'MESSAGE')).toHaveLength(1);
    }

    // An admin operation over many instances acts on each where its session is.
    const bulk = await gateways[1]!.api('POST', '/api/v1/admin/instances/reconnect', {
      key: gateways[1]!.adminKey,
      body: { ids: instances.map((i) => i.id) },
    });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(200);
    expect(bulk.body, JSON.stringify(bulk.body.results?.filter((r: { outcome: string }) => r.outcome !== 'done'))).toMatchObject({
      matched: 24,
      done: 24,
      failed: 0,
    });
    for (const instance of instances) {
      await waitFor(
        async () =>
          (await gateways[2]!.api('GET', '/api/v1/instance/status', { key: instance.token })).body.status === 'CONNECTED'
            ? true
            : undefined,
        10_000,
        'connected again after the bulk reconnect',
      );
    }

    // A paced batch of an instance the first process holds, started through another process.
    const leaving = gateways[0]!;
    const batchOwner = instances.find((i) => held.get(i.id) === leaving.cluster!.node.nodeId)!;
    const virtual = uniqueNumber();
    const texts = Array.from({ length: 8 }, (_, i) => `batch ${i}`);
    const batch = await gateways[1]!.api('POST', '/api/v1/send/batch/text', {
      key: batchOwner.token,
      body: { messages: texts.map((text) => ({ number: virtual, text })), intervalMs: 150 },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(202);
    const progress = async (gw: TestGateway) =>
      (await gw.api('GET', `/api/v1/send/batch/${batch.body.batchId}`, { key: batchOwner.token })).body;
    await waitFor(async () => ((await progress(gateways[2]!)).sent >= 2 ? true : undefined), 10_000, 'two items of the batch sent');

    // One process leaves: its instances move to the other two and come back connected.
    gateways.shift();
    await leaving.stop();
    await waitFor(
      async () => {
        const map = await owners();
        return instances.every((i) => map.get(i.id)) ? true : undefined;
      },
      10_000,
      'every instance leased again',
    );
    for (const [i, from] of instances.entries()) {
      const to = instances[(i + 5) % instances.length]!;
      const res = await waitFor(
        async () => {
          const r = await gateways[i % 2]!.api('POST', '/api/v1/send/text', {
            key: from.token,
            body: { number: to.number, text: `after ${i}` },
          });
          return r.status === 200 ? r : undefined;
        },
        10_000,
        `a send from instance ${i} after the hand-over`,
      );
      sent.push(res.body.key.id);
    }
    await waitFor(
      () => (sent.every((id) => received(id, 'MESSAGE').length > 0) ? true : undefined),
      15_000,
      'every message received after the hand-over',
    );
    // The batch went on where its instance went: every item sent once, none failed by the move.
    const done = await waitFor(
      async () => {
        const p = await progress(gateways[0]!);
        return p.status === 'completed' ? p : undefined;
      },
      20_000,
      'the batch completed on the new owner',
    );
    expect(done).toMatchObject({ total: 8, sent: 8, failed: 0 });
    const itemEvents = (text: string) =>
      receiver.requests.filter((r) => r.json?.event === 'SEND_MESSAGE' && r.json?.data?.message?.conversation === text);
    await waitFor(() => (texts.every((text) => itemEvents(text).length > 0) ? true : undefined), 10_000, 'every batch item delivered');
    for (const text of texts) expect(itemEvents(text)).toHaveLength(1);
    for (const id of sent) {
      expect(received(id, 'SEND_MESSAGE')).toHaveLength(1);
      expect(received(id, 'MESSAGE')).toHaveLength(1);
    }
  }, 120_000);
});
