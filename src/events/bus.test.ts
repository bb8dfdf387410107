/**
 * The bus's ticks (EVENT_COMMIT_SPACING_MS): events that come close together share one commit, and
 * an idle bus stores its first event on the next turn of the event loop, without waiting.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createInstance, startGateway, type TestGateway } from '../../test/support/gateway.js';
import type { CanonicalEvent } from '../network/port.js';
import type { NewOutboxEvent } from './outbox.js';

const connected: CanonicalEvent = { type: 'CONNECTION', data: { status: 'CONNECTED' } };
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The event ids of each outbox write made since the spy was set. */
function ticksOf(spy: { mock: { calls: [NewOutboxEvent[], ...unknown[]][] } }): string[][] {
  return spy.mock.calls.map(([events]) => events.map((event) => event.eventId));
}

describe('event ticks', () => {
  let spaced: TestGateway;
  let idle: TestGateway;
  beforeAll(async () => {
    [spaced, idle] = await Promise.all([
      startGateway({ env: { EVENT_COMMIT_SPACING_MS: '3000' } }),
      // The longest spacing: an event that had to wait it out would miss the test's deadline.
      startGateway({ env: { EVENT_COMMIT_SPACING_MS: '10000' } }),
    ]);
  });
  afterAll(async () => Promise.all([spaced.stop(), idle.stop()]));

  it('events published on different turns within the spacing are stored by one commit', async () => {
    const a = await createInstance(spaced);
    // A tick has just stored this one: the next two come while it is recent.
    await spaced.bus.publish(a.id, connected);
    const append = vi.spyOn(spaced.outbox, 'append');
    const second = spaced.bus.publish(a.id, connected);
    await nextTurn();
    await nextTurn();
    const third = spaced.bus.publish(a.id, connected);
    const [b, c] = await Promise.all([second, third]);
    expect(ticksOf(append)).toEqual([[b!.eventId, c!.eventId]]);
    append.mockRestore();
  });

  it('an idle bus stores an event on the next turn: it does not wait out the spacing', async () => {
    const a = await createInstance(idle);
    // Nothing was stored in this gateway's life so far (a new instance stores no event): the
    // spacing of 10 s must not delay this one.
    const deadline = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 5_000).unref());
    const stored = await Promise.race([idle.bus.publish(a.id, connected), deadline]);
    if (stored === 'late' || stored === undefined) throw new Error(`the event was not stored within 5 s: ${String(stored)}`);
    expect(stored).toMatchObject({ instanceId: a.id, type: 'CONNECTION' });
    expect(await idle.storage.db.selectFrom('outbox').select('event_id').where('event_id', '=', stored.eventId).executeTakeFirst()).toEqual(
      {
        event_id: stored.eventId,
      },
    );
  });
});
