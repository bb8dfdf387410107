import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, createInstance, startGateway, type TestGateway } from '../../test/support/gateway.js';

describe.each(DIALECTS)('outbox store on %s', (dialect) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ dialect });
  });
  afterAll(async () => gw.stop());

  it('stores a large batch in order with pending rows per sink, acknowledges and prunes', async () => {
    const a = await createInstance(gw);
    const events = Array.from({ length: 1203 }, (_, i) => ({
      eventId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}-${a.id}`.slice(0, 60),
      instanceId: a.id,
      instanceName: a.name,
      type: 'MESSAGE' as const,
      body: JSON.stringify({ i }),
      createdAt: 1000 + i,
      sinks: i % 2 === 0 ? ['webhook', 'amqp'] : [],
    }));
    const stored = await gw.outbox.append(events);
    expect(stored.map((e) => e.eventId)).toEqual(events.map((e) => e.eventId));
    const seqs = stored.map((e) => e.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);

    const pending = await gw.outbox.pending('webhook', a.id, 1000);
    expect(pending).toHaveLength(602);
    expect(pending[0]!.entry).toMatchObject({ seq: seqs[0], body: '{"i":0}', instanceName: a.name });
    expect((await gw.outbox.pendingBySink()).amqp).toBe(602);

    await gw.outbox.ackMany(
      pending.map((p) => p.entry.seq),
      'webhook',
    );
    expect(await gw.outbox.pending('webhook', a.id, 10)).toEqual([]);
    // Events still pending for another sink are kept; the rest go.
    const pruned = await gw.outbox.prune(10_000_000);
    expect(pruned).toBeGreaterThanOrEqual(601);
    expect((await gw.outbox.pending('amqp', a.id, 1000)).length).toBe(602);

    // The amqp channel is then removed from the settings: its deliveries are reported and kept.
    expect(await gw.outbox.pendingOfUnknownSinks(['webhook'])).toEqual({ amqp: 602 });
    expect(await gw.outbox.pendingOfUnknownSinks(['webhook', 'amqp'])).toEqual({});
    expect((await gw.outbox.pending('amqp', a.id, 1000)).length).toBe(602);
  });
});
