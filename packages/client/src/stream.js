/**
 * A WebSocket stream of one instance's events (`/api/v1/ws`), reconnecting with exponential backoff
 * and jitter after a drop. Refusals that another try cannot fix (missing parameters 4400, a bad or
 * expired token 4401, a token of another instance 4403, a deleted instance 4404, or the upgrade
 * answered 400/401/403/404) end the stream with an error instead. The stream is live: events while
 * it is disconnected are not replayed (webhooks and brokers deliver every event).
 */
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';

/** Close codes after which reconnecting cannot help. */
export const FINAL_CLOSE_CODES = [4400, 4401, 4403, 4404];
const FINAL_HTTP_STATUSES = [400, 401, 403, 404];

export class EventStreamError extends Error {
  constructor(message, details) {
    super(message);
    this.name = 'EventStreamError';
    Object.assign(this, details);
  }
}

export class EventStream extends EventEmitter {
  constructor(options) {
    super();
    if (!options.instanceId) throw new TypeError('events() needs instanceId');
    if (!options.token) throw new TypeError('events() needs the instance token (token, or the client apiKey)');
    const base = new URL(options.baseUrl);
    base.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
    base.pathname = `${base.pathname.replace(/\/+$/, '')}/api/v1/ws`;
    base.search = new URLSearchParams({ token: options.token, instanceId: options.instanceId }).toString();
    this.url = base.toString();
    this.types = options.types ? new Set(options.types) : undefined;
    this.reconnect = options.reconnect !== false;
    this.minDelayMs = options.minDelayMs ?? 500;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.maxAttempts = options.maxAttempts ?? Infinity;
    this.attempt = 0;
    this.closed = false;
    this.socket = undefined;
    this.timer = undefined;
    this.queue = [];
    this.waiting = [];
    // Errors are reported as 'error' events; without a listener they end the async iterator instead of crashing.
    this.on('error', () => {});
    this.connect();
  }

  /** True while the socket is open. */
  get connected() {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  connect() {
    if (this.closed) return;
    const socket = new WebSocket(this.url);
    this.socket = socket;
    let refusedStatus;
    socket.on('open', () => {
      this.attempt = 0;
      this.emit('open');
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      let event;
      try {
        event = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (this.types && !this.types.has(event.event)) return;
      this.emit('event', event);
      const waiter = this.waiting.shift();
      if (waiter) waiter.resolve({ value: event, done: false });
      else this.queue.push(event);
    });
    socket.on('unexpected-response', (_request, response) => {
      refusedStatus = response.statusCode;
      response.resume();
      socket.terminate();
    });
    socket.on('error', (error) => {
      if (refusedStatus === undefined) this.emit('socketError', error);
    });
    socket.on('close', (code, reasonBuffer) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      const reason = reasonBuffer.toString();
      const final = FINAL_CLOSE_CODES.includes(code) || (refusedStatus !== undefined && FINAL_HTTP_STATUSES.includes(refusedStatus));
      if (this.closed) return this.finish();
      if (final) {
        const why = refusedStatus !== undefined ? `the gateway refused the stream (HTTP ${refusedStatus})` : `closed ${code} ${reason}`;
        this.fail(new EventStreamError(`event stream ended: ${why}`, { code, reason, status: refusedStatus }));
        return;
      }
      if (!this.reconnect || this.attempt >= this.maxAttempts) {
        this.fail(new EventStreamError(`event stream closed (${code} ${reason || 'no reason'}); not reconnecting`, { code, reason }));
        return;
      }
      const delayMs = this.delay();
      this.attempt += 1;
      this.emit('reconnecting', { attempt: this.attempt, delayMs, code, reason, status: refusedStatus });
      this.timer = setTimeout(() => this.connect(), delayMs);
    });
  }

  /** Exponential backoff with full jitter between half and all of the step. */
  delay() {
    const step = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** this.attempt);
    return Math.round(step / 2 + (Math.random() * step) / 2);
  }

  fail(error) {
    this.closed = true;
    this.emit('error', error);
    this.finish(error);
  }

  finish(error) {
    clearTimeout(this.timer);
    for (const waiter of this.waiting.splice(0)) {
      if (error) waiter.reject(error);
      else waiter.resolve({ value: undefined, done: true });
    }
    this.failure = error;
    this.emit('close');
  }

  /** Stops the stream for good. */
  close() {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    if (this.socket && this.socket.readyState !== WebSocket.CLOSED) this.socket.close(1000, 'client closed');
    else this.finish();
  }

  [Symbol.asyncIterator]() {
    return {
      next: () => {
        if (this.queue.length > 0) return Promise.resolve({ value: this.queue.shift(), done: false });
        if (this.closed && !this.socket) {
          return this.failure ? Promise.reject(this.failure) : Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
