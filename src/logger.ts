/** The process logger (pino, JSON). API keys, tokens and query strings never reach it. */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

/**
 * Standard output, one write per turn of the event loop. At `info` every answered request is a
 * line (http/access-log.ts), and a write per line cost the send road a few per cent; here the lines
 * of a turn are joined and written together when the turn ends (setImmediate), synchronously, so a
 * lone line is out within the turn and a process that exits (an uncaught error included) writes
 * what it holds first. A SIGKILL loses at most the lines of the turn it ends.
 */
export class TurnBatchedOutput implements DestinationStream {
  private pending = '';
  private readonly flushScheduled = () => this.flush();

  constructor(private readonly output: DestinationStream = pino.destination({ dest: 1, sync: true })) {
    process.once('exit', this.flushScheduled);
  }

  write(line: string): void {
    if (this.pending === '') setImmediate(this.flushScheduled);
    this.pending += line;
  }

  flush(): void {
    if (this.pending === '') return;
    const lines = this.pending;
    this.pending = '';
    this.output.write(lines);
  }
}

export function createLogger(level: LogLevel, destination: DestinationStream = new TurnBatchedOutput()): Logger {
  return pino(
    {
      level,
      // A logged request keeps its method, path and id only (the `req` serializer below), so its
      // headers need no redaction: a redaction path under `req` made pino copy the request's fields
      // for every access line (~3 % of the send road at `info`). Headers logged by themselves do.
      redact: {
        paths: ['headers.apikey', 'headers.authorization'],
        censor: '[redacted]',
      },
      serializers: {
        // /ws?token=... carries a token in the query: log the path only.
        req: (req: { method: string; url: string; id: string }) => ({
          method: req.method,
          url: req.url.split('?')[0],
          id: req.id,
        }),
      },
    },
    destination,
  );
}
