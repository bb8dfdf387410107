/**
 * WebSocket sink: live, best-effort. Clients subscribe per instance at /ws?token=&instanceId=.
 * A client whose unsent data passes the buffer limit is disconnected (close 1013 "client too slow")
 * rather than letting memory grow; it reconnects and catches up from its own dedupe state.
 *
 * A stream lives no longer than the token it was opened with: a token in its grace period (opened
 * after a rotation, or rotated while the stream runs) closes the stream when its grace ends (4401),
 * by a timer, by a sweep at every ping round (which also re-checks each token against the database,
 * so a rotation or deletion made by another gateway process is seen), and deletion closes at once.
 *
 * Watchers (the admin WebSocket, many instances through a filter) follow the same rules: one opened
 * with an expiring credential (a user's access token) is cut when it expires, and their number is
 * capped by the same WS_MAX_CONNECTIONS_PER_INSTANCE, counting the admin sockets as one instance.
 */
import type { WebSocket } from 'ws';
import { systemClock, type Clock } from '../../clock.js';
import type { OutboxEntry } from '../envelope.js';
import type { LiveSink } from '../sink.js';

export const SLOW_CLIENT_CLOSE = { code: 1013, reason: 'client too slow' } as const;
export const TOKEN_EXPIRED_CLOSE = { code: 4401, reason: 'token expired, please use the new token' } as const;
export const TOKEN_INVALID_CLOSE = { code: 4401, reason: 'invalid api key' } as const;
export const TOO_MANY_CLOSE = { code: 4429, reason: 'too many WebSocket connections for this instance' } as const;
export const TOO_MANY_WATCHERS_CLOSE = { code: 4429, reason: 'too many admin WebSocket connections' } as const;

/** What the stream was opened with: the token's hash and, when it is a grace token, when it ends. */
export interface StreamCredential {
  tokenHash: string;
  validUntil: number | null;
}

/** Where a token stands now: its end of grace (null: primary), or 'invalid' (gone, instance deleted). */
export type TokenState = number | null | 'invalid';

export interface WebSocketHubOptions {
  clock?: Clock;
  /** WS_MAX_CONNECTIONS_PER_INSTANCE: streams beyond this for one instance are refused (4429). */
  maxPerInstance?: number;
  /** Re-reads a token's state (the database, through the token cache). */
  tokenState?: (tokenHash: string) => Promise<TokenState>;
}

/** What the hub tracks of every socket: liveness and when its credential ends. */
interface Tracked {
  validUntil: number | null;
  /** How the socket is closed when validUntil passes (default TOKEN_EXPIRED_CLOSE). */
  expiredClose?: { code: number; reason: string };
  isAlive: boolean;
  timer?: NodeJS.Timeout;
}

interface Stream extends StreamCredential, Tracked {
  instanceId: string;
}

interface Watcher extends Tracked {
  filter: EventFilter;
}

/** A watcher of many instances (the admin WebSocket): gets every event its filter accepts. */
export type EventFilter = (entry: OutboxEntry) => boolean;

/** setTimeout's largest delay; longer graces re-arm. */
const MAX_TIMER_MS = 2_147_483_647;

export class WebSocketHub implements LiveSink {
  readonly name = 'websocket';
  private readonly clients = new Map<string, Set<WebSocket>>();
  private readonly streams = new Map<WebSocket, Stream>();
  private readonly watchers = new Map<WebSocket, Watcher>();
  private readonly pinger: NodeJS.Timeout;
  private readonly clock: Clock;
  private readonly maxPerInstance: number;

  constructor(
    private readonly maxBufferedBytes: number,
    pingIntervalMs: number,
    private readonly options: WebSocketHubOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
    this.maxPerInstance = options.maxPerInstance ?? Number.POSITIVE_INFINITY;
    this.pinger = setInterval(() => this.pingAll(), pingIntervalMs);
    this.pinger.unref();
  }

  /** True when the instance may open one more stream. */
  hasRoom(instanceId: string): boolean {
    return this.count(instanceId) < this.maxPerInstance;
  }

  add(instanceId: string, socket: WebSocket, credential: StreamCredential = { tokenHash: '', validUntil: null }): void {
    let set = this.clients.get(instanceId);
    if (!set) {
      set = new Set();
      this.clients.set(instanceId, set);
    }
    set.add(socket);
    const stream: Stream = { instanceId, isAlive: true, ...credential };
    this.streams.set(socket, stream);
    this.schedule(socket, stream);
    socket.on('pong', () => {
      stream.isAlive = true;
    });
    socket.on('close', () => this.remove(instanceId, socket));
    socket.on('error', () => this.remove(instanceId, socket));
  }

  /** True when one more watcher (admin WebSocket) may open. */
  hasWatcherRoom(): boolean {
    return this.watchers.size < this.maxPerInstance;
  }

  /**
   * Adds a socket that receives the events of every instance that `filter` accepts (admin WebSocket).
   * `expiry`: when its credential expires (epoch ms) and the close then; none for the admin key.
   */
  watch(socket: WebSocket, filter: EventFilter, expiry?: { at: number; close: { code: number; reason: string } }): void {
    const watcher: Watcher = { filter, validUntil: expiry?.at ?? null, expiredClose: expiry?.close, isAlive: true };
    this.watchers.set(socket, watcher);
    this.schedule(socket, watcher);
    socket.on('pong', () => {
      watcher.isAlive = true;
    });
    socket.on('close', () => this.unwatch(socket));
    socket.on('error', () => this.unwatch(socket));
  }

  count(instanceId?: string): number {
    if (instanceId) return this.clients.get(instanceId)?.size ?? 0;
    let n = this.watchers.size;
    for (const set of this.clients.values()) n += set.size;
    return n;
  }

  push(entry: OutboxEntry): void {
    const now = this.clock.now();
    for (const [socket, watcher] of [...this.watchers]) {
      if (watcher.filter(entry)) this.send(socket, watcher, entry, now);
    }
    const set = this.clients.get(entry.instanceId);
    if (!set) return;
    for (const socket of [...set]) this.send(socket, this.streams.get(socket), entry, now);
  }

  /** Sends one event, or cuts the socket: its credential ended, or it reads too slowly. */
  private send(socket: WebSocket, tracked: Tracked | undefined, entry: OutboxEntry, now: number): void {
    if (socket.readyState !== socket.OPEN) return;
    // Never one event past the end of the token's grace, even before the timer fires.
    if (tracked && tracked.validUntil !== null && tracked.validUntil <= now) {
      this.cut(socket, tracked.expiredClose ?? TOKEN_EXPIRED_CLOSE);
      return;
    }
    if (socket.bufferedAmount > this.maxBufferedBytes) {
      this.cut(socket, SLOW_CLIENT_CLOSE);
      return;
    }
    socket.send(entry.body);
  }

  /**
   * The instance's token was rotated: the streams opened with its (then) primary token end when the
   * grace ends. Streams opened with an older grace token keep their earlier end.
   */
  tokenRotated(instanceId: string, oldTokensValidUntil: number): void {
    for (const socket of this.clients.get(instanceId) ?? []) {
      const stream = this.streams.get(socket);
      if (!stream || stream.validUntil !== null) continue;
      stream.validUntil = oldTokensValidUntil;
      this.schedule(socket, stream);
    }
  }

  /** Closes every socket of an instance (deletion). */
  disconnect(instanceId: string, code: number, reason: string): void {
    for (const socket of [...(this.clients.get(instanceId) ?? [])]) this.cut(socket, { code, reason });
    this.clients.delete(instanceId);
  }

  close(): Promise<void> {
    clearInterval(this.pinger);
    for (const set of this.clients.values()) for (const socket of set) socket.close(1001, 'server shutting down');
    for (const socket of this.watchers.keys()) socket.close(1001, 'server shutting down');
    for (const stream of this.streams.values()) clearTimeout(stream.timer);
    for (const watcher of this.watchers.values()) clearTimeout(watcher.timer);
    this.streams.clear();
    this.watchers.clear();
    this.clients.clear();
    return Promise.resolve();
  }

  private schedule(socket: WebSocket, stream: Tracked): void {
    clearTimeout(stream.timer);
    if (stream.validUntil === null) return;
    const delay = stream.validUntil - this.clock.now();
    if (delay <= 0) {
      this.cut(socket, stream.expiredClose ?? TOKEN_EXPIRED_CLOSE);
      return;
    }
    stream.timer = setTimeout(
      () => {
        if (stream.validUntil !== null && stream.validUntil <= this.clock.now())
          this.cut(socket, stream.expiredClose ?? TOKEN_EXPIRED_CLOSE);
        else this.schedule(socket, stream);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    stream.timer.unref();
  }

  private cut(socket: WebSocket, close: { code: number; reason: string }): void {
    const stream = this.streams.get(socket);
    socket.close(close.code, close.reason);
    if (stream) this.remove(stream.instanceId, socket);
    this.unwatch(socket);
  }

  private unwatch(socket: WebSocket): void {
    const watcher = this.watchers.get(socket);
    if (!watcher) return;
    clearTimeout(watcher.timer);
    this.watchers.delete(socket);
  }

  private remove(instanceId: string, socket: WebSocket): void {
    const stream = this.streams.get(socket);
    if (stream) clearTimeout(stream.timer);
    this.streams.delete(socket);
    const set = this.clients.get(instanceId);
    if (!set) return;
    set.delete(socket);
    if (set.size === 0) this.clients.delete(instanceId);
  }

  private pingAll(): void {
    const now = this.clock.now();
    for (const [socket, watcher] of [...this.watchers]) {
      if (watcher.validUntil !== null && watcher.validUntil <= now) {
        this.cut(socket, watcher.expiredClose ?? TOKEN_EXPIRED_CLOSE);
        continue;
      }
      if (!watcher.isAlive) {
        socket.terminate();
        this.unwatch(socket);
        continue;
      }
      watcher.isAlive = false;
      socket.ping();
    }
    for (const [instanceId, set] of this.clients) {
      for (const socket of set) {
        const stream = this.streams.get(socket);
        if (stream && stream.validUntil !== null && stream.validUntil <= now) {
          this.cut(socket, TOKEN_EXPIRED_CLOSE);
          continue;
        }
        if (stream?.isAlive === false) {
          socket.terminate();
          this.remove(instanceId, socket);
          continue;
        }
        if (stream) stream.isAlive = false;
        socket.ping();
      }
    }
    void this.recheckTokens();
  }

  /** Sees rotations and deletions made by another gateway process (or while no timer ran). */
  private async recheckTokens(): Promise<void> {
    const tokenState = this.options.tokenState;
    if (!tokenState) return;
    const hashes = new Set([...this.streams.values()].map((stream) => stream.tokenHash).filter((hash) => hash !== ''));
    for (const hash of hashes) {
      let state: TokenState;
      try {
        state = await tokenState(hash);
      } catch {
        continue; // storage trouble: keep the streams, check again next round
      }
      for (const [socket, stream] of [...this.streams]) {
        if (stream.tokenHash !== hash) continue;
        if (state === 'invalid') {
          this.cut(socket, TOKEN_INVALID_CLOSE);
        } else if (state !== null && (stream.validUntil === null || state < stream.validUntil)) {
          stream.validUntil = state;
          this.schedule(socket, stream);
        }
      }
    }
  }
}
