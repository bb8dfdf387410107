/** The close-code policy in isolation: every code Baileys reports, and the backoff arithmetic. */
import { DisconnectReason } from 'baileys';
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../retry.js';
import { CLOSE_CODES, decideOnClose, type CloseContext } from './policy.js';

const backoff = { baseMs: 1000, maxMs: 60_000 };
const half = () => 0.5;
const base: CloseContext = { code: undefined, linked: true, showedQr: false, attempt: 0 };

describe('decideOnClose', () => {
  it('uses the same numbers as Baileys', () => {
    expect(CLOSE_CODES.loggedOut).toBe(DisconnectReason.loggedOut);
    expect(CLOSE_CODES.forbidden).toBe(DisconnectReason.forbidden);
    expect(CLOSE_CODES.timedOut).toBe(DisconnectReason.timedOut);
    expect(CLOSE_CODES.timedOut).toBe(DisconnectReason.connectionLost);
    expect(CLOSE_CODES.multideviceMismatch).toBe(DisconnectReason.multideviceMismatch);
    expect(CLOSE_CODES.connectionClosed).toBe(DisconnectReason.connectionClosed);
    expect(CLOSE_CODES.connectionReplaced).toBe(DisconnectReason.connectionReplaced);
    expect(CLOSE_CODES.badSession).toBe(DisconnectReason.badSession);
    expect(CLOSE_CODES.unavailableService).toBe(DisconnectReason.unavailableService);
    expect(CLOSE_CODES.restartRequired).toBe(DisconnectReason.restartRequired);
  });

  it.each([
    [515, { action: 'reconnect', delayMs: 0, status: 'CONNECTING', reason: 'restart_required' }],
    [408, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'connection_lost' }],
    [428, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'connection_closed' }],
    [500, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'bad_session' }],
    [503, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'service_unavailable' }],
    [440, { action: 'stop', status: 'DISCONNECTED', reason: 'connection_replaced' }],
    [403, { action: 'stop', status: 'DISCONNECTED', reason: 'banned_or_blocked' }],
    [411, { action: 'stop', status: 'DISCONNECTED', reason: 'multidevice_mismatch' }],
    [401, { action: 'logout', status: 'LOGGED_OUT', reason: 'logged_out_from_phone' }],
    [599, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'closed_599' }],
    [undefined, { action: 'reconnect', delayMs: 750, status: 'DISCONNECTED', reason: 'connection_error' }],
  ] as const)('code %s on a linked session', (code, expected) => {
    expect(decideOnClose({ ...base, code }, backoff, half)).toEqual(expected);
  });

  it('401 with device_removed says so', () => {
    expect(decideOnClose({ ...base, code: 401, detail: 'device_removed' }, backoff, half)).toEqual({
      action: 'logout',
      status: 'LOGGED_OUT',
      reason: 'device_removed',
    });
  });

  it('408 after unscanned QR codes stops instead of reconnecting', () => {
    expect(decideOnClose({ ...base, code: 408, linked: false, showedQr: true }, backoff, half)).toEqual({
      action: 'stop',
      status: 'DISCONNECTED',
      reason: 'qr_attempts_exhausted',
    });
    // A linked session that loses its connection still reconnects.
    expect(decideOnClose({ ...base, code: 408, linked: true, showedQr: false }, backoff, half).action).toBe('reconnect');
  });
});

describe('backoffDelay', () => {
  it('doubles per attempt and stops at the cap', () => {
    const steps = Array.from({ length: 10 }, (_, attempt) => backoffDelay({ baseMs: 1000, maxMs: 30_000 }, attempt, () => 0.999_999));
    expect(steps).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
  });

  it('jitter keeps each delay between half and all of its step', () => {
    for (let attempt = 0; attempt < 8; attempt++) {
      const step = Math.min(60_000, 1000 * 2 ** attempt);
      expect(backoffDelay(backoff, attempt, () => 0)).toBe(step / 2);
      expect(backoffDelay(backoff, attempt, () => 0.999_999)).toBe(step);
    }
  });

  it('survives absurd attempt counts', () => {
    expect(backoffDelay(backoff, 10_000, half)).toBe(45_000);
  });
});
