/**
 * SQLite copies its write-ahead log back into the database file (a checkpoint) inside the commit
 * that crosses the log's size threshold: a copy of up to 40 MB and an fsync that stalled the event
 * loop, and every request with it, for 40–110 ms every few seconds under a steady send load. A
 * worker thread with its own connection checkpoints instead, a little at a time. PASSIVE never
 * waits on the writer or the readers and never blocks them.
 *
 * The log starts over from its beginning only when a write transaction begins with every frame
 * already copied. Under a steady load the writer commits while each step of the worker runs, so
 * that moment never came: the log reached the writer's own threshold, and the writer checkpointed
 * in its commit after all (two fsyncs, 18–36 ms of stalled event loop, about every second at 2,000
 * sends/s). So once the log holds `recycleAtFrames`, the worker asks for a short pause of the
 * writes (`holdWrites`: the connection is held, the event loop runs on), copies what is left and
 * lets the next write transaction start the log over. The writer's own checkpoint stays as the
 * safety net (a pause that could not be had, a reader holding an old snapshot).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface CheckpointResult {
  /** Frames in the log. */
  log: number;
  /** Frames copied into the database file. */
  checkpointed: number;
}

export interface CheckpointerOptions {
  /** A PASSIVE step this often (ms). */
  intervalMs?: number;
  /** Frames in the log at which a step asks for `holdWrites`. */
  recycleAtFrames?: number;
  /**
   * Runs `work` while no statement runs on the writer's connection (the storage holds its one
   * SQLite connection), so the step inside copies every frame.
   */
  holdWrites?: (work: () => Promise<void>) => Promise<void>;
}

/** The longest the writes are held for one recycle. */
const HOLD_LIMIT_MS = 1_000;

type Message = { type: 'ready' | 'closed' } | { type: 'recycle' } | ({ type: 'result' } & (CheckpointResult | { error: string }));

// Plain CommonJS evaluated in the worker: no file of its own, so it runs the same from src (tests)
// and dist. `checkpoint()` is one PASSIVE step; its result is what `wal_checkpoint` reports.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => {
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    return { type: 'result', log: row.log, checkpointed: row.checkpointed };
  } catch (error) {
    return { type: 'result', error: String(error && error.message || error) };
  }
};
const timer = setInterval(() => {
  const step = checkpoint();
  const threshold = workerData.recycleAtFrames;
  // Asked even when this step copied everything: the writer, between two of its statements, may
  // have a transaction open, and its next one begins after frames this step did not see.
  if (threshold && step.log >= threshold) parentPort.postMessage({ type: 'recycle' });
}, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') parentPort.postMessage(checkpoint());
  if (message === 'close') {
    clearInterval(timer);
    db.close();
    parentPort.postMessage({ type: 'closed' });
  }
});
parentPort.postMessage({ type: 'ready' });
`;

export class BackgroundCheckpointer {
  private closing: Promise<void> | undefined;
  /** Answers the worker owes, in the order it was asked (it answers in order). */
  private readonly waiting: { resolve(answer: Message): void; reject(error: Error): void }[] = [];
  private recycling = false;
  /** Pauses of the writes that ended with the whole log copied (the next write starts it over). */
  recycled = 0;

  private constructor(
    private readonly worker: Worker,
    private readonly holdWrites: CheckpointerOptions['holdWrites'],
  ) {
    worker.on('message', (message: Message) => {
      if (message.type === 'recycle') void this.recycle();
      else if (message.type !== 'ready') this.waiting.shift()?.resolve(message);
    });
    worker.once('exit', () => {
      for (const waiter of this.waiting.splice(0)) waiter.reject(new Error('checkpointer stopped'));
    });
  }

  /** Starts checkpointing `file` (a SQLite database in WAL mode) every `intervalMs`. */
  static async start(file: string, options: CheckpointerOptions = {}): Promise<BackgroundCheckpointer> {
    const { intervalMs = 100, recycleAtFrames, holdWrites } = options;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { driver, file, intervalMs, recycleAtFrames: holdWrites ? recycleAtFrames : undefined },
    });
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', () => {
        worker.off('error', reject);
        resolve();
      });
    });
    // A failed step is retried at the next interval; the writer's own checkpoint covers a worker
    // that died, so it must not take the process with it.
    worker.on('error', () => {});
    worker.unref();
    return new BackgroundCheckpointer(worker, holdWrites);
  }

  /** Runs one checkpoint step now and tells how far the log is copied. */
  async checkpoint(): Promise<CheckpointResult> {
    if (this.closing) throw new Error('checkpointer stopped');
    const answer = await this.ask('checkpoint');
    if (answer.type !== 'result') throw new Error(`checkpointer answered ${answer.type}`);
    if ('error' in answer) throw new Error(answer.error);
    return { log: answer.log, checkpointed: answer.checkpointed };
  }

  /** Stops the worker (closing its connection); the same promise on every call. */
  close(): Promise<void> {
    this.closing ??= this.ask('close')
      .catch(() => undefined)
      .then(() => this.worker.terminate())
      .then(() => undefined);
    return this.closing;
  }

  /** Copies the rest of the log while the writes are held (see the file's comment). */
  private async recycle(): Promise<void> {
    if (this.recycling || this.closing || !this.holdWrites) return;
    this.recycling = true;
    try {
      // One step first without the hold: the held step then has only what came since to copy, and
      // its fsyncs (the pause) find little to write.
      await this.checkpoint();
      await this.holdWrites(async () => {
        if (this.closing) return;
        // A step slower than this (a disk in trouble) goes on without the hold: PASSIVE never
        // blocks the writer, and the log starts over at a later pause.
        let timer: NodeJS.Timeout | undefined;
        const step = await Promise.race([
          this.checkpoint(),
          new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), HOLD_LIMIT_MS))),
        ]).finally(() => clearTimeout(timer));
        if (step && step.checkpointed === step.log) this.recycled += 1;
      });
    } catch {
      // The next step asks again; the writer's own checkpoint is the safety net.
    } finally {
      this.recycling = false;
    }
  }

  private ask(message: 'checkpoint' | 'close'): Promise<Message> {
    return new Promise((resolve, reject) => {
      if (this.worker.threadId === -1) return reject(new Error('checkpointer stopped'));
      this.waiting.push({ resolve, reject });
      this.worker.postMessage(message);
    });
  }
}
