/**
 * One commit per tick on the send road: a sent message's row is written in the transaction that
 * stores its SEND_MESSAGE event; a row that cannot be written there (its instance is gone) is given
 * back to the store without failing the events it shared the transaction with.
 */
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  DIALECTS,
  connectedInstance,
  createInstance,
  startGateway,
  uniqueNumber,
  waitFor,
  type TestGateway,
} from '../../test/support/gateway.js';
import type { NewOutboxEvent } from '../events/outbox.js';
import { MessageStore } from './store.js';

/** A sent text message of `instanceId` with id `id`, to save. */
const message = (instanceId: string, id: string) => ({
  instanceId,
  key: { remoteJid: '5511900000001@s.whatsapp.net', fromMe: true, id },
  messageType: 'conversation',
  message: { conversation: id },
  messageTimestamp: 1_780_000_000,
  createdAt: Date.now(),
});

describe.each(DIALECTS)('message rows commit with their events on %s', (dialect) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ dialect });
  });
  afterAll(async () => gw.stop());
  afterEach(() => vi.restoreAllMocks());

  it('the row of a sent message is there when its SEND_MESSAGE event is stored', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const found: Promise<unknown>[] = [];
    gw.bus.onStored((entry) => {
      // Read at once, before the store could write on its own: only the shared commit can have put it there.
      if (entry.type === 'SEND_MESSAGE' && entry.instanceId === a.id) {
        const id = (JSON.parse(entry.body) as { data: { key: { id: string } } }).data.key.id;
        found.push(
          gw.storage.db
            .selectFrom('messages')
            .select('message_id')
            .where('instance_id', '=', a.id)
            .where('message_id', '=', id)
            .executeTakeFirst(),
        );
      }
    });
    const sends = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: `m${i}` } }),
      ),
    );
    expect(sends.every((s) => s.status === 200)).toBe(true);
    await waitFor(() => (found.length === 20 ? true : undefined));
    expect((await Promise.all(found)).every((row) => row !== undefined)).toBe(true);
  });

  it("a row that fails inside the shared transaction is given back; the transaction's other writes commit", async () => {
    const a = await createInstance(gw);
    const store = new MessageStore(gw.storage.db);
    store.shareCommits(() => undefined);
    // Both waiting in one batch: a row of a deleted instance (foreign key) and a good one.
    const good = store.save(message(a.id, 'SHARED-GOOD'));
    const orphan = store.save(message('no-such-instance', 'SHARED-ORPHAN'));
    orphan.catch(() => undefined);
    let outcome: Awaited<ReturnType<MessageStore['writeIn']>>;
    await gw.storage.db.transaction().execute(async (trx) => {
      outcome = await store.writeIn(trx);
      await trx.insertInto('event_sequences').values({ instance_id: a.id, seq: 1000 }).execute();
    });
    // The batch was given back (nothing to confirm) and the transaction's own write is there.
    expect(outcome!).toBeUndefined();
    expect(await gw.storage.db.selectFrom('event_sequences').select('seq').where('instance_id', '=', a.id).executeTakeFirst()).toEqual({
      seq: 1000,
    });
    // The store's own flush writes the good row and refuses the orphan alone.
    await good;
    await expect(orphan).rejects.toBeDefined();
    expect(await store.find(a.id, 'SHARED-GOOD')).toMatchObject({ key: { id: 'SHARED-GOOD' } });
  });

  /** One more message store on the gateway's bus, and spies on how the outbox stores each tick. */
  function storeOnTheBus() {
    const store = new MessageStore(gw.storage.db);
    gw.bus.addCommitParticipant(store);
    store.shareCommits(() => gw.bus.currentTick());
    return { store, oneStatement: vi.spyOn(gw.outbox, 'appendInOneStatement'), transaction: vi.spyOn(gw.outbox, 'append') };
  }

  /** Calls of `spy` (an outbox append) that stored an event of `instanceId`; other instances' ticks may run meanwhile. */
  function callsFor(spy: { mock: { calls: [NewOutboxEvent[], ...unknown[]][] } }, instanceId: string): number {
    return spy.mock.calls.filter(([events]) => events.some((event) => event.instanceId === instanceId)).length;
  }

  /** Queues an event of `instanceId` first, so the bus's next tick takes the rows saved right after it. */
  function queueEvent(instanceId: string) {
    return gw.bus.enqueue(instanceId, { type: 'CONNECTION', data: { status: 'CONNECTED' } });
  }

  it('a tick with a row that cannot be written still stores its events; the store writes the good rows and refuses the bad one', async () => {
    const a = await createInstance(gw);
    const { store, oneStatement, transaction } = storeOnTheBus();
    const { stored } = await queueEvent(a.id);
    const good = store.save(message(a.id, 'TICK-GOOD'));
    const orphan = store.save(message('no-such-instance', 'TICK-ORPHAN'));
    orphan.catch(() => undefined);
    expect(await stored).toMatchObject({ instanceId: a.id, type: 'CONNECTION' });
    await good;
    await expect(orphan).rejects.toBeDefined();
    expect(await store.find(a.id, 'TICK-GOOD')).toMatchObject({ key: { id: 'TICK-GOOD' } });
    // PostgreSQL tried the one statement, which failed whole, then stored the tick as a transaction.
    expect(callsFor(oneStatement, a.id)).toBe(dialect === 'postgres' ? 1 : 0);
    expect(callsFor(transaction, a.id)).toBe(1);
  });

  it('a read of a message saved a moment ago waits for its write: while it waits, and while its tick has it uncommitted', async () => {
    const a = await createInstance(gw);
    const { store } = storeOnTheBus();
    const waiting = store.save(message(a.id, 'READ-WAITING'));
    expect(await store.find(a.id, 'READ-WAITING')).toMatchObject({ key: { id: 'READ-WAITING' } });
    await waiting;
    // Read the moment the bus's tick has taken the rows into its write, before it commits (PostgreSQL
    // reads on another connection of the pool: without waiting it would not see the row yet).
    let read: Promise<unknown> | undefined;
    // Awaited below (`await read`); started here, at the moment of interest.
    const readNow = (): void => {
      read ??= store.find(a.id, 'READ-WRITING');
    };
    if (dialect === 'postgres') {
      const asStatement = store.asStatement.bind(store);
      vi.spyOn(store, 'asStatement').mockImplementation(() => {
        const taken = asStatement();
        if (taken) readNow();
        return taken;
      });
    } else {
      const writeIn = store.writeIn.bind(store);
      vi.spyOn(store, 'writeIn').mockImplementation(async (trx) => {
        const taken = await writeIn(trx);
        if (taken) readNow();
        return taken;
      });
    }
    const { stored } = await queueEvent(a.id);
    const writing = store.save(message(a.id, 'READ-WRITING'));
    await stored;
    await writing;
    expect(read).toBeDefined();
    expect(await read).toMatchObject({ key: { id: 'READ-WRITING' } });
  });

  it('rows written beside the events keep every character, and a null stays null', async () => {
    const a = await createInstance(gw);
    const { store, oneStatement, transaction } = storeOnTheBus();
    const asStatement = vi.spyOn(store, 'asStatement');
    const text = 'a "quoted" \\ back\\slash, {brace} NULL – ünïcode 🎉\n';
    const { stored } = await queueEvent(a.id);
    const saved = store.save({ ...message(a.id, 'TICK-TEXT'), message: { conversation: text }, pushName: 'NULL' });
    await stored;
    await saved;
    expect(callsFor(oneStatement, a.id)).toBe(dialect === 'postgres' ? 1 : 0);
    expect(callsFor(transaction, a.id)).toBe(dialect === 'postgres' ? 0 : 1);
    // The row went with the event (the tick took it), not in the store's own write.
    if (dialect === 'postgres') expect(asStatement.mock.results.some((result) => result.value !== undefined)).toBe(true);
    expect(await store.find(a.id, 'TICK-TEXT')).toMatchObject({ message: { conversation: text }, pushName: 'NULL' });
    const row = await gw.storage.db
      .selectFrom('messages')
      .select(['participant', 'media_key'])
      .where('message_id', '=', 'TICK-TEXT')
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ participant: null, media_key: null });
  });

  it.runIf(dialect === 'postgres')(
    'a tick that fails because the database is out of reach is not sent again as the transaction',
    async () => {
      const a = await createInstance(gw);
      // Raises what a lost connection reports (SQLSTATE 08006), without ending the test's connection.
      await sql`create or replace function fail_as_unreachable() returns boolean language plpgsql as $$
      begin raise exception 'connection failure' using errcode = '08006'; end $$`.execute(gw.storage.db);
      const failed = vi.fn();
      const writeIn = vi.fn(() => Promise.resolve(undefined));
      let once = true;
      gw.bus.addCommitParticipant({
        writeIn,
        asStatement: () => {
          if (!once) return undefined;
          once = false;
          // A data-modifying CTE runs even when nothing reads it.
          return {
            statement: sql`update instances set name = name where id = ${a.id} and fail_as_unreachable()`,
            committed: () => undefined,
            failed,
          };
        },
      });
      const { stored } = await queueEvent(a.id);
      await expect(stored).rejects.toMatchObject({ code: '08006' });
      expect(failed).toHaveBeenCalledTimes(1);
      expect(writeIn).not.toHaveBeenCalled();
      // The next tick goes through.
      expect(await (await queueEvent(a.id)).stored).toMatchObject({ instanceId: a.id });
    },
  );
});
