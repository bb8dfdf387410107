/**
 * What to do when a WhatsApp socket closes, decided from Baileys' close code alone (plus what the
 * session knows): a pure function, so every branch is tested without a network.
 *
 *   515 restart required (normal right after pairing)  -> reconnect now
 *   408 / 428 / 500 / 503 and unknown codes             -> reconnect after a capped exponential
 *                                                          backoff with jitter; but a 408 that ends
 *                                                          a QR session nobody scanned stops
 *   440 connection replaced (another client took over)  -> stop, do not fight it; report
 *   401 logged out (phone removed the device, or us)    -> wipe creds and keys, LOGGED_OUT, ready
 *                                                          for a new QR
 *   403 forbidden (account banned or blocked)           -> stop, report; creds are kept
 *   411 multi-device mismatch                           -> stop, report
 */
import { backoffDelay, type Backoff } from '../../retry.js';
import type { InstanceStatus } from '../port.js';

export const CLOSE_CODES = {
  loggedOut: 401,
  forbidden: 403,
  timedOut: 408,
  multideviceMismatch: 411,
  connectionClosed: 428,
  connectionReplaced: 440,
  badSession: 500,
  unavailableService: 503,
  restartRequired: 515,
} as const;

export interface CloseContext {
  /** Baileys' Boom status code; undefined when the error carried none. */
  code: number | undefined;
  /** The stream error's child tag type (e.g. `device_removed`, `replaced`), when there was one. */
  detail?: string | undefined;
  /** The device is linked (creds hold the phone's signed identity). */
  linked: boolean;
  /** This socket showed at least one QR code. */
  showedQr: boolean;
  /** Consecutive failed attempts so far (0 for the first reconnect). */
  attempt: number;
}

export type CloseDecision =
  | { action: 'reconnect'; delayMs: number; status: InstanceStatus; reason: string }
  | { action: 'stop'; status: InstanceStatus; reason: string }
  | { action: 'logout'; status: 'LOGGED_OUT'; reason: string };

export type BackoffSettings = Backoff;

const RETRY_REASONS: Record<number, string> = {
  [CLOSE_CODES.timedOut]: 'connection_lost',
  [CLOSE_CODES.connectionClosed]: 'connection_closed',
  [CLOSE_CODES.badSession]: 'bad_session',
  [CLOSE_CODES.unavailableService]: 'service_unavailable',
};

export function decideOnClose(context: CloseContext, backoff: BackoffSettings, random: () => number): CloseDecision {
  const { code } = context;
  const retry = (reason: string): CloseDecision => ({
    action: 'reconnect',
    delayMs: backoffDelay(backoff, context.attempt, random),
    status: 'DISCONNECTED',
    reason,
  });
  switch (code) {
    case CLOSE_CODES.restartRequired:
      return { action: 'reconnect', delayMs: 0, status: 'CONNECTING', reason: 'restart_required' };
    case CLOSE_CODES.loggedOut:
      return {
        action: 'logout',
        status: 'LOGGED_OUT',
        reason: context.detail === 'device_removed' ? 'device_removed' : 'logged_out_from_phone',
      };
    case CLOSE_CODES.connectionReplaced:
      return { action: 'stop', status: 'DISCONNECTED', reason: 'connection_replaced' };
    case CLOSE_CODES.forbidden:
      return { action: 'stop', status: 'DISCONNECTED', reason: 'banned_or_blocked' };
    case CLOSE_CODES.multideviceMismatch:
      return { action: 'stop', status: 'DISCONNECTED', reason: 'multidevice_mismatch' };
    case CLOSE_CODES.timedOut:
      // Baileys closes with 408 when the QR refs run out: nobody scanned, so stop asking.
      if (context.showedQr && !context.linked) return { action: 'stop', status: 'DISCONNECTED', reason: 'qr_attempts_exhausted' };
      return retry(RETRY_REASONS[code]!);
    case CLOSE_CODES.connectionClosed:
    case CLOSE_CODES.badSession:
    case CLOSE_CODES.unavailableService:
      return retry(RETRY_REASONS[code]!);
    case undefined:
      return retry('connection_error');
    default:
      return retry(`closed_${code}`);
  }
}
