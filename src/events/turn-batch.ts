/**
 * Requests made in the same turn of the event loop (before its microtasks run), or while a call
 * runs, served together by one call: the dispatcher's lanes read their pages and delete what they
 * delivered this way, one statement for all of them instead of one per lane. With many instances
 * each lane has an event or two per wake, so a statement per lane meant two per event; on
 * PostgreSQL each statement is a round trip. Requests made while a call runs go in the next call,
 * right after it.
 *
 * By default a call starts at the end of the current task, not on a later turn: a lane alone (a
 * backlog on a busy gateway) would otherwise wait a whole turn of the loop per page and per
 * acknowledgement. Where each call costs more than that wait (SQLite's acknowledgements, each a
 * commit), `next-turn` gathers the requests of a whole turn.
 */
/**
 * When a batch's call starts: at the end of the current task (`end-of-task`), or once the event loop
 * has run every task it has ready (`next-turn`, a `setImmediate`). The second gathers requests made
 * by many tasks (each answer of the webhook delivery thread is a task of its own) at the price of a
 * wait of one turn.
 */
export type TurnBatchStart = 'end-of-task' | 'next-turn';

interface Turn<Request, Result> {
  requests: Request[];
  waiting: { resolve: (result: Result) => void; reject: (error: unknown) => void }[];
}

export class TurnBatch<Request, Result> {
  private next: Turn<Request, Result> | undefined;
  private serving = false;

  /** `serve` answers every request of a turn, results in the order of the requests. */
  constructor(
    private readonly serve: (requests: Request[]) => Promise<Result[]>,
    private readonly start: TurnBatchStart = 'end-of-task',
  ) {}

  request(request: Request): Promise<Result> {
    if (!this.next) {
      this.next = { requests: [], waiting: [] };
      if (!this.serving) {
        if (this.start === 'next-turn') setImmediate(() => void this.run());
        else queueMicrotask(() => void this.run());
      }
    }
    const turn = this.next;
    turn.requests.push(request);
    return new Promise<Result>((resolve, reject) => turn.waiting.push({ resolve, reject }));
  }

  private async run(): Promise<void> {
    const turn = this.next;
    if (!turn) return;
    this.next = undefined;
    this.serving = true;
    try {
      const results = await this.serve(turn.requests);
      turn.waiting.forEach((waiting, i) => waiting.resolve(results[i]!));
    } catch (error) {
      for (const waiting of turn.waiting) waiting.reject(error);
    } finally {
      this.serving = false;
      if (this.next) queueMicrotask(() => void this.run());
    }
  }
}
