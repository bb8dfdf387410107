/**
 * The tests' fake WhatsApp server run in a child process (bench/fake-wa-server-child.ts), seen from
 * the gateway's process: its URL, the phone scanning a QR, the logins it sees, its memory. Starting it
 * makes this process's Baileys trust the child's test root, as an in-process server's `start()` does.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { trustTestRoot } from '../src/network/whatsapp/fixtures/fake-wa-server.js';
import type { FromChild, Request, ToChild } from './fake-wa-server-child.js';

export interface FakeWaServerProcessOptions {
  account: 'realistic' | 'empty';
  /** Offline messages per resume of a realistic account. */
  backlog?: number;
  /** 0: any free port. */
  port?: number;
}

/** Emits `login` (the username) for every client that logs in. */
export class FakeWaServerProcess extends EventEmitter {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (message: FromChild & { type: 'done' }) => void }>();

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    /** The public key of the child's Noise root, base64 (a gateway in another process trusts it: trust-test-root.mjs). */
    readonly root: string,
  ) {
    super();
    child.on('message', (message: FromChild) => {
      if (message.type === 'login') this.emit('login', message.username);
      if (message.type !== 'done') return;
      this.pending.get(message.id)?.resolve(message);
      this.pending.delete(message.id);
    });
  }

  static async start(options: FakeWaServerProcessOptions): Promise<FakeWaServerProcess> {
    const child = fork(fileURLToPath(new URL('./fake-wa-server-child.ts', import.meta.url)), {
      env: {
        ...process.env,
        FAKE_WA_ACCOUNT: options.account,
        FAKE_WA_BACKLOG: String(options.backlog ?? ''),
        FAKE_WA_PORT: String(options.port ?? 0),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ready = await new Promise<FromChild & { type: 'ready' }>((resolve, reject) => {
      child.on('message', (message: FromChild) => {
        if (message.type === 'ready') resolve(message);
      });
      child.once('exit', (code) => reject(new Error(`the fake WhatsApp server exited (${code}) before it was ready`)));
    });
    trustTestRoot(Buffer.from(ready.root, 'base64'));
    return new FakeWaServerProcess(child, ready.url, ready.root);
  }

  private request(message: Request): Promise<FromChild & { type: 'done' }> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve });
      this.child.send({ ...message, id } satisfies ToChild);
    });
  }

  /** The phone scans `qr`: pair-success, the 515 restart; resolves once that phone's client logged in. */
  async scan(qr: string, phone: string): Promise<void> {
    const { error } = await this.request({ type: 'scan', qr, phone });
    if (error) throw new Error(error);
  }

  /** The server process's RSS and heap, after a GC when it has one. */
  async memory(): Promise<{ rss: number; heap: number }> {
    const { memory } = await this.request({ type: 'memory' });
    return memory!;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }
}
