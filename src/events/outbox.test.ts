import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { DIALECTS, createInstance, startGateway, type TestGateway, type TestInstance } from '../../test/support/gateway.js';
import { StaleOwnerError } from '../storage/fence.js';
import { OutboxStore } from './outbox.js';

/** An event `i` of `instance` for the outbox, wanted by `sinks`, made at `from + i`. */
function eventOf(instance: TestInstance, i: number, sinks: string[] = [], from = 1000) {
  return {
    eventId: `event-${instance.id}-${i}`,
    instanceId: instance.id,
    instanceName: instance.name,
    type: 'MESSAGE' as const,
    body: JSON.stringify({ i }),
    createdAt: from + i,
    sinks,
  };
}

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
    // The outbox numbers each instance's events (`seq` in the envelope) as it stores them.
    expect(pending[0]!.entry).toMatchObject({ seq: seqs[0], body: '{"i":0,"seq":1}', instanceName: a.name });
    expect(stored.map((e) => (JSON.parse(e.body) as { seq: number }).seq)).toEqual(events.map((_, i) => i + 1));
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

  it('gives each event the seq of its row, across chunks and after the newest rows were deleted', async () => {
    const a = await createInstance(gw);
    const rowSeqs = async () =>
      new Map(
        (await gw.storage.db.selectFrom('outbox').select(['event_id', 'seq']).where('instance_id', '=', a.id).execute()).map((row) => [
          row.event_id,
          Number(row.seq),
        ]),
      );
    // 1,203 events: three INSERT chunks of up to 500 rows.
    const first = await gw.outbox.append(Array.from({ length: 1203 }, (_, i) => eventOf(a, i, ['webhook'])));
    let inTable = await rowSeqs();
    expect(first.map((e) => e.seq)).toEqual(first.map((e) => inTable.get(e.eventId)));
    // The newest rows go (as a prune may take them): their numbers are not given again.
    const newest = Math.max(...first.map((e) => e.seq));
    await gw.storage.db
      .deleteFrom('outbox')
      .where('instance_id', '=', a.id)
      .where('seq', '>', newest - 10)
      .execute();
    const second = await gw.outbox.append(Array.from({ length: 3 }, (_, i) => eventOf(a, 5000 + i, ['webhook'])));
    inTable = await rowSeqs();
    expect(second.map((e) => e.seq)).toEqual(second.map((e) => inTable.get(e.eventId)));
    expect(Math.min(...second.map((e) => e.seq))).toBeGreaterThan(newest);
    // Each pending row points at its own event.
    const pending = await gw.outbox.pending('webhook', a.id, 2000);
    for (const { entry } of pending) expect(inTable.get(entry.eventId)).toBe(entry.seq);
    expect(pending.at(-1)!.entry.eventId).toBe(second.at(-1)!.eventId);
  });

  it("numbers each instance's events on from where it stopped when one batch holds events of several instances", async () => {
    const instances = [await createInstance(gw), await createInstance(gw), await createInstance(gw)];
    // The second instance has stored two events already; then one batch interleaves all three.
    await gw.outbox.append([eventOf(instances[1]!, 0), eventOf(instances[1]!, 1)]);
    const batch = Array.from({ length: 14 }, (_, i) => eventOf(instances[i % 3]!, 100 + i));
    const stored = await gw.outbox.append(batch);
    expect(stored.map((e) => e.eventId)).toEqual(batch.map((e) => e.eventId));
    const seqsOf = (id: string) => stored.filter((e) => e.instanceId === id).map((e) => (JSON.parse(e.body) as { seq: number }).seq);
    expect(seqsOf(instances[0]!.id)).toEqual([1, 2, 3, 4, 5]);
    expect(seqsOf(instances[1]!.id)).toEqual([3, 4, 5, 6, 7]);
    expect(seqsOf(instances[2]!.id)).toEqual([1, 2, 3, 4]);
  });

  it('reads the pages of several lanes at once, each as its own read gives it, and acknowledges several lanes at once', async () => {
    const [a, b, c] = [await createInstance(gw), await createInstance(gw), await createInstance(gw)];
    await gw.outbox.append([
      ...Array.from({ length: 5 }, (_, i) => eventOf(a, i, ['webhook', 'amqp'])),
      ...Array.from({ length: 3 }, (_, i) => eventOf(b, i, ['webhook'])),
      eventOf(c, 0, ['amqp']),
    ]);
    const lanes = [
      { sink: 'webhook', instanceId: a.id, limit: 3 },
      { sink: 'webhook', instanceId: c.id, limit: 3 },
      { sink: 'amqp', instanceId: a.id, limit: 100 },
      { sink: 'webhook', instanceId: b.id, limit: 3 },
      { sink: 'amqp', instanceId: c.id, limit: 3 },
    ];
    const together = await gw.outbox.pendingOfLanes(lanes);
    const alone = [];
    for (const lane of lanes) alone.push(await gw.outbox.pending(lane.sink, lane.instanceId, lane.limit));
    expect(together).toEqual(alone);
    expect(together.map((page) => page.length)).toEqual([3, 0, 5, 3, 1]);
    expect(together[0]!.map((p) => JSON.parse(p.entry.body).i)).toEqual([0, 1, 2]);
    expect(together[0]![0]).toMatchObject({ entry: { instanceId: a.id, instanceName: a.name, type: 'MESSAGE' }, attempts: 0 });
    // More lanes than one PostgreSQL statement reads (200): the last lane's page comes from the second.
    const many = [...Array.from({ length: 200 }, (_, i) => ({ sink: `none${i}`, instanceId: a.id, limit: 3 })), lanes[3]!];
    const manyPages = await gw.outbox.pendingOfLanes(many);
    expect(manyPages.slice(0, 200).every((page) => page.length === 0)).toBe(true);
    expect(manyPages[200]).toEqual(together[3]);

    await gw.outbox.ackLanes([
      { sink: 'webhook', seqs: together[0]!.map((p) => p.entry.seq) },
      { sink: 'amqp', seqs: together[4]!.map((p) => p.entry.seq) },
      { sink: 'webhook', seqs: together[3]!.slice(0, 2).map((p) => p.entry.seq) },
    ]);
    const after = await gw.outbox.pendingOfLanes(lanes);
    expect(after.map((page) => page.length)).toEqual([2, 0, 5, 1, 0]);
    expect(after[0]!.map((p) => JSON.parse(p.entry.body).i)).toEqual([3, 4]);
  });

  it('prunes in chunks: every delivered event older than the cutoff moves to the archive, pending and newer ones stay', async () => {
    const a = await createInstance(gw);
    // More than one prune chunk (1,000): 11,000 events, every tenth still pending, the last 500 too new.
    const events = Array.from({ length: 11_000 }, (_, i) => eventOf(a, i, i % 10 === 0 ? ['webhook'] : []));
    await gw.outbox.append(events);
    const cutoff = 1000 + 10_500;
    // (The count covers every instance; this one's share is checked below.)
    expect(await gw.outbox.prune(cutoff, true)).toBeGreaterThanOrEqual(10_500 - 1050);
    const moved = 10_500 - 1050;
    const left = await gw.storage.db.selectFrom('outbox').select('event_id').where('instance_id', '=', a.id).execute();
    expect(left).toHaveLength(11_000 - moved);
    const archived = await gw.storage.db
      .selectFrom('event_archive')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('instance_id', '=', a.id)
      .executeTakeFirstOrThrow();
    expect(Number(archived.n)).toBe(moved);
    // The history reads both tables and sees every event once.
    expect(
      await gw.outbox.historyCount(a.id, { fromSeq: 0, toSeq: Number.MAX_SAFE_INTEGER, sinceAt: null, untilAt: null, types: null }),
    ).toBe(11_000);
    expect(await gw.outbox.prune(cutoff, true)).toBe(0);
  });

  it('gives the event loop back between prune chunks, so requests are not held for the whole prune', async () => {
    const a = await createInstance(gw);
    const events = Array.from({ length: 3_500 }, (_, i) => eventOf(a, i, [], 2000));
    await gw.outbox.append(events);
    let done = false;
    let turnsDuringPrune = 0;
    const countTurns = () => {
      if (done) return;
      turnsDuringPrune += 1;
      setImmediate(countTurns);
    };
    setImmediate(countTurns);
    await gw.outbox.prune(2000 + 3_500, true);
    done = true;
    // Four chunks of 1,000: the loop turned between them (on SQLite nothing else would give it back).
    expect(turnsDuringPrune).toBeGreaterThanOrEqual(3);
  });
});

describe('outbox store in one statement (PostgreSQL)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ dialect: 'postgres' });
  });
  afterAll(async () => gw.stop());

  it('is used on PostgreSQL, and never on SQLite', async () => {
    expect(gw.outbox.storesInOneStatement()).toBe(true);
    const sqlite = await startGateway({ dialect: 'sqlite' });
    try {
      expect(sqlite.outbox.storesInOneStatement()).toBe(false);
    } finally {
      await sqlite.stop();
    }
  });

  it('stores, numbers and queues events as append does, going on from where append stopped', async () => {
    const [a, b, c] = [await createInstance(gw), await createInstance(gw), await createInstance(gw)];
    await gw.outbox.append([eventOf(b, 0, ['webhook']), eventOf(b, 1)]);
    // 1,203 events interleaving three instances, half wanted by two sinks, one body `{}`.
    const batch = Array.from({ length: 1203 }, (_, i) => eventOf([a, b, c][i % 3]!, 100 + i, i % 2 === 0 ? ['webhook', 'amqp'] : []));
    batch[4] = { ...batch[4]!, body: '{}' };
    // Characters an array literal must escape, and the word NULL, arrive as they were sent.
    const tricky = JSON.stringify({ text: 'a "quoted" \\ back\\slash, {brace} NULL – ünïcode 🎉\n' });
    batch[7] = { ...batch[7]!, body: tricky };
    const stored = await gw.outbox.appendInOneStatement(batch);
    expect(stored.map((e) => e.eventId)).toEqual(batch.map((e) => e.eventId));
    const seqs = stored.map((e) => e.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    const numbers = (id: string) => stored.filter((e) => e.instanceId === id).map((e) => (JSON.parse(e.body) as { seq: number }).seq);
    expect(numbers(a.id)).toEqual(Array.from({ length: 401 }, (_, i) => i + 1));
    expect(numbers(b.id)).toEqual(Array.from({ length: 401 }, (_, i) => i + 3));
    expect(numbers(c.id)).toEqual(Array.from({ length: 401 }, (_, i) => i + 1));
    expect(stored[0]).toMatchObject({ body: '{"i":100,"seq":1}', instanceName: a.name, type: 'MESSAGE', createdAt: 1100 });
    expect(stored[4]!.body).toBe('{"seq":4}');
    expect(stored[7]!.body).toBe(`${tricky.slice(0, -1)},"seq":5}`);
    expect(JSON.parse(stored[7]!.body)).toMatchObject({ text: 'a "quoted" \\ back\\slash, {brace} NULL – ünïcode 🎉\n' });
    // What is stored is what was returned, and every wanted sink has its pending row.
    const pending = await gw.outbox.pending('webhook', a.id, 1000);
    expect(pending.map((p) => p.entry)).toEqual(stored.filter((e, i) => e.instanceId === a.id && i % 2 === 0));
    expect(pending[0]).toMatchObject({ attempts: 0, nextAttemptAt: 1100 });
    expect((await gw.outbox.pending('amqp', b.id, 1000)).length).toBe(200);
    // append goes on from there.
    const [next] = await gw.outbox.append([eventOf(b, 9999)]);
    expect((JSON.parse(next!.body) as { seq: number }).seq).toBe(404);
  });

  it('stores nothing when a statement beside it fails: no event, no pending row, no number used', async () => {
    const a = await createInstance(gw);
    await gw.outbox.appendInOneStatement([eventOf(a, 0)]);
    const failing = sql`insert into event_sequences (instance_id, seq) values ('no-such-instance', 1)`;
    await expect(gw.outbox.appendInOneStatement([eventOf(a, 1, ['webhook'])], [failing])).rejects.toThrow(/foreign key/);
    expect(await gw.storage.db.selectFrom('outbox').select('event_id').where('instance_id', '=', a.id).execute()).toHaveLength(1);
    expect(await gw.outbox.pending('webhook', a.id, 10)).toEqual([]);
    const [again] = await gw.outbox.appendInOneStatement([eventOf(a, 2)], [sql`select 1`]);
    expect((JSON.parse(again!.body) as { seq: number }).seq).toBe(2);
  });

  it('in cluster mode passes the fence first: a stale owner stores nothing, the owner stores', async () => {
    const [a, b] = [await createInstance(gw), await createInstance(gw)];
    const fenced = new OutboxStore(gw.storage.db);
    const asked: string[][] = [];
    let stale: string[] = [b.id];
    fenced.fenceWith(async (trx, instanceIds) => {
      // The fence runs in the statement's transaction.
      expect(trx.isTransaction).toBe(true);
      asked.push(instanceIds);
      return stale.filter((id) => instanceIds.includes(id));
    });
    const tick = [eventOf(a, 0, ['webhook']), eventOf(b, 0, ['webhook']), eventOf(a, 1)];
    const refused = fenced.appendInOneStatement(tick, [sql`insert into event_sequences (instance_id, seq) values (${b.id}, 50)`]);
    await expect(refused).rejects.toBeInstanceOf(StaleOwnerError);
    await expect(refused).rejects.toMatchObject({ instanceIds: [b.id] });
    expect(asked).toEqual([[a.id, b.id]]);
    // Nothing of the tick, nor of the statement beside it, was stored.
    expect(await gw.storage.db.selectFrom('outbox').select('event_id').where('instance_id', 'in', [a.id, b.id]).execute()).toEqual([]);
    expect(await gw.storage.db.selectFrom('event_sequences').select('seq').where('instance_id', '=', b.id).execute()).toEqual([]);
    stale = [];
    const stored = await fenced.appendInOneStatement(tick);
    expect(stored.map((e) => (JSON.parse(e.body) as { seq: number }).seq)).toEqual([1, 1, 2]);
    expect((await gw.outbox.pending('webhook', b.id, 10)).map((p) => p.entry)).toEqual([stored[1]]);
  });
});
