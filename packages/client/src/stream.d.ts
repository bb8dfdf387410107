import { EventEmitter } from 'node:events';
import type { EventType, WaygateEvent } from './generated/api.js';

/** Close codes after which reconnecting cannot help: 4400 missing parameters, 4401 bad or expired token, 4403 another instance's token, 4404 instance deleted. */
export declare const FINAL_CLOSE_CODES: readonly number[];

export interface EventStreamOptions {
  baseUrl: string;
  instanceId: string;
  /** The instance's token. */
  token: string;
  /** Only these event types (filtered on the client). */
  types?: EventType[];
  /** Reconnect after a drop (default true). */
  reconnect?: boolean;
  /** First reconnect delay (default 500 ms); doubles each try, with jitter, up to maxDelayMs (default 30 s). */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Tries in a row before giving up (default unlimited). */
  maxAttempts?: number;
}

/** Why a stream ended for good: a close code (4400/4401/4403/4404) or a refused upgrade's HTTP status. */
export declare class EventStreamError extends Error {
  readonly code?: number;
  readonly reason?: string;
  readonly status?: number;
}

export interface ReconnectInfo {
  attempt: number;
  delayMs: number;
  /** The close code of the drop (1006 for a lost connection). */
  code: number;
  reason: string;
  /** The HTTP status when the upgrade itself was refused (e.g. 503 on a standby gateway). */
  status?: number;
}

export interface EventStreamEvents {
  event: [event: WaygateEvent];
  open: [];
  reconnecting: [info: ReconnectInfo];
  /** The stream ended for good (an EventStreamError), after which it emits 'close'. */
  error: [error: EventStreamError];
  /** A socket-level error before a reconnect; informational. */
  socketError: [error: Error];
  close: [];
}

/** Events of one instance as they happen; also an async iterable of them. */
export declare class EventStream extends EventEmitter<EventStreamEvents> implements AsyncIterable<WaygateEvent> {
  constructor(options: EventStreamOptions);
  readonly url: string;
  /** True while the socket is open. */
  readonly connected: boolean;
  /** Stops the stream for good. */
  close(): void;
  [Symbol.asyncIterator](): AsyncIterator<WaygateEvent>;
}
