/** The process logger (pino, JSON). API keys, tokens and query strings never reach it. */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
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
