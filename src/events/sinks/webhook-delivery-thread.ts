/**
 * A worker thread that POSTs runs of webhook events (entry: `webhook-thread.ts`). The lane stays on
 * the main thread (what is pending, acknowledgements, retries, dead letters); only the POSTs of a
 * run of fresh events move here, so their answers do not wait for turns of a busy main loop. One
 * thread serves every lane; each run is sequential, runs of different lanes overlap.
 */
import { Worker } from 'node:worker_threads';

/** What the thread's own WebhookSink is built with (plain data: it crosses to the thread). */
export interface DeliveryThreadSettings {
  timeoutMs: number;
  userAgent: string;
  allowPrivate?: boolean;
}

export interface DeliveryRun {
  id: number;
  url: string;
  secret: string;
  /** The target must be a public address (WebhookSink.postSigned). */
  guarded: boolean;
  entries: { body: string; eventId: string; type: string }[];
}

export interface DeliveryRunOutcome {
  id: number;
  /** Events acknowledged by the receiver, from the first. */
  delivered: number;
  /** How long each attempted POST took (the delivered ones, then the failed one). */
  seconds: number[];
  /** The answer (or its absence) that stopped the run. */
  failure?: { status: number | null; error: string };
}

// The thread imports the sink's module: from dist it is JavaScript; from src (tests, tsx) the
// thread registers tsx first. Evaluated as CommonJS so it runs the same in both.
const BOOT = `
const { workerData } = require('node:worker_threads');
const ready = workerData.tsx ? import(workerData.tsx).then((api) => api.register()) : Promise.resolve();
ready.then(() => import(workerData.entry));
`;

export class WebhookDeliveryThread {
  private worker: Worker | undefined;
  private started: Promise<Worker> | undefined;
  private readonly waiting = new Map<number, { resolve: (outcome: DeliveryRunOutcome) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly settings: DeliveryThreadSettings) {}

  /** POSTs the entries in order on the thread; resolves when the run ends (all delivered or one failed). */
  deliver(run: Omit<DeliveryRun, 'id'>): Promise<DeliveryRunOutcome> {
    if (this.closed) return Promise.reject(new Error('webhook delivery thread stopped'));
    // A running thread gets the run now, not a microtask later.
    if (this.worker) return this.send(this.worker, run);
    return this.start().then((worker) => this.send(worker, run));
  }

  private send(worker: Worker, run: Omit<DeliveryRun, 'id'>): Promise<DeliveryRunOutcome> {
    const id = this.nextId++;
    return new Promise<DeliveryRunOutcome>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ ...run, id } satisfies DeliveryRun);
    });
  }

  /** Ends the thread after closing its connections; runs under way are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker ?? (await this.started?.catch(() => undefined));
    if (!worker) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      worker.once('message', (message) => {
        if (message === 'closed') {
          clearTimeout(timer);
          resolve();
        }
      });
      worker.postMessage('close');
    });
    await worker.terminate();
  }

  private start(): Promise<Worker> {
    this.started ??= new Promise<Worker>((resolve, reject) => {
      const source = import.meta.url.endsWith('.ts');
      const entry = new URL(`./webhook-thread.${source ? 'ts' : 'js'}`, import.meta.url).href;
      const tsx = source ? import.meta.resolve('tsx/esm/api') : undefined;
      const worker = new Worker(BOOT, { eval: true, workerData: { entry, tsx, settings: this.settings } });
      worker.unref();
      worker.once('message', (message) => {
        if (message !== 'ready') return;
        this.worker = worker;
        worker.on('message', (outcome: DeliveryRunOutcome | 'closed') => {
          if (outcome === 'closed') return;
          const waiter = this.waiting.get(outcome.id);
          this.waiting.delete(outcome.id);
          waiter?.resolve(outcome);
        });
        resolve(worker);
      });
      // A thread that dies fails its runs (their lanes deliver on the main thread); the next run starts
      // a new one. Once per thread: 'exit' follows 'error', and must not touch a successor's runs.
      let gone = false;
      const lost = (error: Error) => {
        if (gone) return;
        gone = true;
        this.worker = undefined;
        this.started = undefined;
        for (const waiter of this.waiting.values()) waiter.reject(error);
        this.waiting.clear();
        reject(error);
      };
      worker.on('error', lost);
      worker.once('exit', (code) => lost(new Error(`webhook delivery thread exited (${code})`)));
    });
    return this.started;
  }
}
