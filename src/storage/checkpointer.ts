/**
 * SQLite copies its write-ahead log back into the database file (a checkpoint) inside the commit
 * that crosses the log's size threshold: a copy of up to 40 MB and an fsync that stalled the event
 * loop, and every request with it, for 40–110 ms every few seconds under a steady send load. A
 * worker thread with its own connection checkpoints instead, a little at a time. PASSIVE never
 * waits on the writer or the readers and never blocks them; the writer's own automatic checkpoint
 * stays as the safety net, and finds little left to copy.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface CheckpointResult {
  /** Frames in the log. */
  log: number;
  /** Frames copied into the database file. */
  checkpointed: number;
}

// Plain CommonJS evaluated in the worker: no file of its own, so it runs the same from src (tests)
// and dist. `checkpoint()` is one PASSIVE step; its result is what `wal_checkpoint` reports.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => {
  try {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    return { log: row.log, checkpointed: row.checkpointed };
  } catch (error) {
    return { error: String(error && error.message || error) };
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') parentPort.postMessage(checkpoint());
  if (message === 'close') {
    clearInterval(timer);
    db.close();
    parentPort.postMessage('closed');
  }
});
parentPort.postMessage('ready');
`;

export class BackgroundCheckpointer {
  private closing: Promise<void> | undefined;

  private constructor(private readonly worker: Worker) {}

  /** Starts checkpointing `file` (a SQLite database in WAL mode) every `intervalMs`. */
  static async start(file: string, intervalMs = 100): Promise<BackgroundCheckpointer> {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(WORKER, { eval: true, workerData: { driver, file, intervalMs } });
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
    return new BackgroundCheckpointer(worker);
  }

  /** Runs one checkpoint step now and tells how far the log is copied. */
  checkpoint(): Promise<CheckpointResult> {
    if (this.closing) return Promise.reject(new Error('checkpointer stopped'));
    return this.ask('checkpoint') as Promise<CheckpointResult>;
  }

  /** Stops the worker (closing its connection); the same promise on every call. */
  close(): Promise<void> {
    this.closing ??= this.ask('close')
      .catch(() => undefined)
      .then(() => this.worker.terminate())
      .then(() => undefined);
    return this.closing;
  }

  private ask(message: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const onExit = () => reject(new Error('checkpointer stopped'));
      this.worker.once('exit', onExit);
      this.worker.once('message', (answer: unknown) => {
        this.worker.off('exit', onExit);
        if (answer && typeof answer === 'object' && 'error' in answer) reject(new Error(String(answer.error)));
        else resolve(answer);
      });
      this.worker.postMessage(message);
    });
  }
}
