/**
 * WebSocket sink: live, best-effort. Clients subscribe per instance at /ws?token=&instanceId=.
 * A client whose unsent data passes the buffer limit is disconnected (close 1013 "client too slow")
 * rather than letting memory grow; it reconnects and catches up from its own dedupe state.
 */
import type { WebSocket } from 'ws';
import type { OutboxEntry } from '../envelope.js';
import type { LiveSink } from '../sink.js';

export const SLOW_CLIENT_CLOSE = { code: 1013, reason: 'client too slow' } as const;

/** A watcher of many instances (the admin WebSocket): gets every event its filter accepts. */
export type EventFilter = (entry: OutboxEntry) => boolean;

export class WebSocketHub implements LiveSink {
  readonly name = 'websocket';
  private readonly clients = new Map<string, Set<WebSocket>>();
  private readonly watchers = new Map<WebSocket, EventFilter>();
  private readonly pinger: NodeJS.Timeout;

  constructor(
    private readonly maxBufferedBytes: number,
    pingIntervalMs: number,
  ) {
    this.pinger = setInterval(() => this.pingAll(), pingIntervalMs);
    this.pinger.unref();
  }

  add(instanceId: string, socket: WebSocket): void {
    let set = this.clients.get(instanceId);
    if (!set) {
      set = new Set();
      this.clients.set(instanceId, set);
    }
    set.add(socket);
    this.track(socket);
    socket.on('close', () => this.remove(instanceId, socket));
    socket.on('error', () => this.remove(instanceId, socket));
  }

  /** Adds a socket that receives the events of every instance that `filter` accepts (admin WebSocket). */
  watch(socket: WebSocket, filter: EventFilter): void {
    this.watchers.set(socket, filter);
    this.track(socket);
    socket.on('close', () => this.watchers.delete(socket));
    socket.on('error', () => this.watchers.delete(socket));
  }

  count(instanceId?: string): number {
    if (instanceId) return this.clients.get(instanceId)?.size ?? 0;
    let n = this.watchers.size;
    for (const set of this.clients.values()) n += set.size;
    return n;
  }

  push(entry: OutboxEntry): void {
    for (const [socket, filter] of this.watchers) {
      if (!filter(entry)) continue;
      if (this.send(socket, entry)) continue;
      this.watchers.delete(socket);
    }
    const set = this.clients.get(entry.instanceId);
    if (!set) return;
    for (const socket of set) {
      if (!this.send(socket, entry)) this.remove(entry.instanceId, socket);
    }
  }

  /** Sends one event; false when the socket was closed for reading too slowly. */
  private send(socket: WebSocket, entry: OutboxEntry): boolean {
    if (socket.readyState !== socket.OPEN) return true;
    if (socket.bufferedAmount > this.maxBufferedBytes) {
      socket.close(SLOW_CLIENT_CLOSE.code, SLOW_CLIENT_CLOSE.reason);
      return false;
    }
    socket.send(entry.body);
    return true;
  }

  private track(socket: WebSocket): void {
    (socket as WebSocket & { isAlive?: boolean }).isAlive = true;
    socket.on('pong', () => {
      (socket as WebSocket & { isAlive?: boolean }).isAlive = true;
    });
  }

  /** Closes every socket of an instance (deletion, token rotation past grace). */
  disconnect(instanceId: string, code: number, reason: string): void {
    for (const socket of this.clients.get(instanceId) ?? []) socket.close(code, reason);
    this.clients.delete(instanceId);
  }

  close(): Promise<void> {
    clearInterval(this.pinger);
    for (const set of this.clients.values()) for (const socket of set) socket.close(1001, 'server shutting down');
    for (const socket of this.watchers.keys()) socket.close(1001, 'server shutting down');
    this.clients.clear();
    this.watchers.clear();
    return Promise.resolve();
  }

  private remove(instanceId: string, socket: WebSocket): void {
    const set = this.clients.get(instanceId);
    if (!set) return;
    set.delete(socket);
    if (set.size === 0) this.clients.delete(instanceId);
  }

  private pingAll(): void {
    for (const socket of this.watchers.keys()) {
      const tracked = socket as WebSocket & { isAlive?: boolean };
      if (tracked.isAlive === false) {
        socket.terminate();
        this.watchers.delete(socket);
        continue;
      }
      tracked.isAlive = false;
      socket.ping();
    }
    for (const [instanceId, set] of this.clients) {
      for (const socket of set) {
        const tracked = socket as WebSocket & { isAlive?: boolean };
        if (tracked.isAlive === false) {
          socket.terminate();
          this.remove(instanceId, socket);
          continue;
        }
        tracked.isAlive = false;
        socket.ping();
      }
    }
  }
}
