/** The process logger (pino, JSON). API keys, tokens and query strings never reach it. */
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.apikey', 'req.headers.authorization', 'headers.apikey'],
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
