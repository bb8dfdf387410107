import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
  type TestInstance,
} from '../../test/support/gateway.js';
import { expectError, expectStatus, instanceCalls } from '../../test/support/social.js';

describe('/call on the sandbox network', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  const { get, post } = instanceCalls(() => gw);
  const call = async (from: string, to: TestInstance, isVideo = false): Promise<string> =>
    expectStatus(await gw.api('POST', '/api/v1/sandbox/calls', { key: gw.adminKey, body: { from, to: to.number, isVideo } }), 200).callId;

  beforeAll(async () => {
    gw = await startGateway();
    events = recordEvents(gw);
  });
  afterAll(async () => gw.stop());

  it('rejects a ringing call and keeps the call history', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const caller = uniqueNumber();
    const callId = await call(caller, a, true);
    const ringing = expectStatus(await get(a, '/call/history'), 200);
    expect(ringing).toMatchObject({ total: 1, offset: 0, limit: 100 });
    expect(ringing.items[0]).toMatchObject({
      callId,
      from: `${caller}@s.whatsapp.net`,
      direction: 'incoming',
      isVideo: true,
      isGroup: false,
      status: 'ringing',
      rejectedBy: null,
      endedAt: null,
    });

    const rejected = expectStatus(await post(a, '/call/reject', { callId }), 200);
    expect(rejected).toMatchObject({ callId, status: 'rejected', rejectedBy: 'user' });
    expect(rejected.endedAt).toEqual(expect.any(Number));
    const event = await events.next(a.id, 'CALL', (e) => e.data.id === callId && e.data.status === 'reject');
    expect(event.data).toMatchObject({ from: `${caller}@s.whatsapp.net`, isVideo: true });
    expect(event.data.reason).toBeUndefined();
    expectError(await post(a, '/call/reject', { callId }), 409, /not ringing \(it is rejected\)/);
    expectError(await post(a, '/call/reject', { callId: 'UNKNOWNCALL' }), 404, /call UNKNOWNCALL not found/);
  });

  it('records a call the caller hung up on as missed', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const callId = await call(uniqueNumber(), a);
    const ended = await gw.api('POST', '/api/v1/sandbox/calls/end', { key: gw.adminKey, body: { callId, to: a.number } });
    expect(expectStatus(ended, 200)).toEqual({ callId, status: 'missed' });
    await events.next(a.id, 'CALL', (e) => e.data.id === callId && e.data.status === 'timeout');
    expect(expectStatus(await get(a, '/call/history'), 200).items[0]).toMatchObject({ callId, status: 'missed', rejectedBy: null });
    expectError(await post(a, '/call/reject', { callId }), 409, /not ringing/);
    expectError(
      await gw.api('POST', '/api/v1/sandbox/calls/end', { key: gw.adminKey, body: { callId, to: a.number } }),
      409,
      /not ringing/,
    );
  });

  it('auto-rejects calls with a message when the instance asks for it, whatever its event filter', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    expect(expectStatus(await get(a, '/call/settings'), 200)).toEqual({ autoReject: false, message: null });
    const settings = expectStatus(
      await post(a, '/call/settings', { autoReject: true, message: 'I cannot take calls, please write.' }),
      200,
    );
    expect(settings).toEqual({ autoReject: true, message: 'I cannot take calls, please write.' });
    expect(expectStatus(await get(a, '/call/settings'), 200)).toEqual(settings);

    const caller = uniqueNumber();
    const callId = await call(caller, a);
    const rejection = await events.next(a.id, 'CALL', (e) => e.data.id === callId && e.data.status === 'reject');
    expect(rejection.data.reason).toBe('auto_reject');
    const text = await events.next(a.id, 'SEND_MESSAGE', (e) => e.data.key.remoteJid === `${caller}@s.whatsapp.net`);
    expect(text.data.message).toMatchObject({ conversation: 'I cannot take calls, please write.' });
    expect(expectStatus(await get(a, '/call/history'), 200).items[0]).toMatchObject({ callId, status: 'rejected', rejectedBy: 'auto' });

    // Keep the rule, drop the message; and filter CALL events out: calls are still rejected.
    expect(expectStatus(await post(a, '/call/settings', { autoReject: true, message: null }), 200)).toEqual({
      autoReject: true,
      message: null,
    });
    expectStatus(await post(a, '/instance/webhook', { webhookEvents: ['MESSAGE'] }), 200);
    const quiet = await call(uniqueNumber(), a);
    const history = await waitFor(
      async () => {
        const page = expectStatus(await get(a, '/call/history'), 200);
        return page.items.find((c: any) => c.callId === quiet && c.status === 'rejected');
      },
      5000,
      'the filtered call to be rejected',
    );
    expect(history.rejectedBy).toBe('auto');

    expect(expectStatus(await post(a, '/call/settings', { autoReject: false }), 200)).toEqual({ autoReject: false, message: null });
    const kept = await call(uniqueNumber(), a);
    // Auto-rejection runs right after the offer; give a wrong one the time to show.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await gw.bus.settled();
    expect(expectStatus(await get(a, '/call/history'), 200).items[0]).toMatchObject({ callId: kept, status: 'ringing' });
    expectError(await post(a, '/call/settings', { message: 'x' }), 400, /autoReject is required/);
  });
});
