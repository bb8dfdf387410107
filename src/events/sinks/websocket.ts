/**
 * WebSocket sink: live, best-effort. Clients subscribe per instance at /ws?token=&instanceId=.
 * A client whose unsent data passes the buffer limit is disconnected (close 1013 "client too slow")
 * rather than letting memory grow; it reconnects and catches up from its own dedupe state.
 */
import type { WebSocket } from 'ws';
import type { OutboxEntry } from '../envelope.js';
import type { LiveSink } from '../sink.js';

export const SLOW_CLIENT_CLOSE = { code: 1013, reason: 'client too slow' } as const;

export class WebSocketHub implements LiveSink {
  readonly name = 'websocket';
  private readonly clients = new Map<string, Set<WebSocket>>();
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
    (socket as WebSocket & { isAlive?: boolean }).isAlive = true;
    socket.on('pong', () => {
      (socket as WebSocket & { isAlive?: boolean }).isAlive = true;
    });
    socket.on('close', () => this.remove(instanceId, socket));
    socket.on('error', () => this.remove(instanceId, socket));
  }

  count(instanceId?: string): number {
    if (instanceId) return this.clients.get(instanceId)?.size ?? 0;
    let n = 0;
    for (const set of this.clients.values()) n += set.size;
    return n;
  }

  push(entry: OutboxEntry): void {
    const set = this.clients.get(entry.instanceId);
    if (!set) return;
    for (const socket of set) {
      if (socket.readyState !== socket.OPEN) continue;
      if (socket.bufferedAmount > this.maxBufferedBytes) {
        socket.close(SLOW_CLIENT_CLOSE.code, SLOW_CLIENT_CLOSE.reason);
        this.remove(entry.instanceId, socket);
        continue;
      }
      socket.send(entry.body);
    }
  }

  /** Closes every socket of an instance (deletion, token rotation past grace). */
  disconnect(instanceId: string, code: number, reason: string): void {
    for (const socket of this.clients.get(instanceId) ?? []) socket.close(code, reason);
    this.clients.delete(instanceId);
  }

  close(): Promise<void> {
    clearInterval(this.pinger);
    for (const set of this.clients.values()) for (const socket of set) socket.close(1001, 'server shutting down');
    this.clients.clear();
    return Promise.resolve();
  }

  private remove(instanceId: string, socket: WebSocket): void {
    const set = this.clients.get(instanceId);
    if (!set) return;
    set.delete(socket);
    if (set.size === 0) this.clients.delete(instanceId);
  }

  private pingAll(): void {
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
