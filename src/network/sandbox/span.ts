/**
 * The sandbox network across gateway processes. In cluster mode each process holds the sessions of
 * some sandbox instances; a delivery to a number not linked in this process travels, as one JSON
 * message, on a transport every process shares (Redis pub/sub in production), and the process that
 * holds the number delivers it as if the sender were local. Best-effort, like the relay of live
 * events: a message nobody holds is dropped.
 *
 * Wire format (internal, may change between versions): one JSON object per delivery,
 *   { v: 1, origin, kind: 'message',  to, from, chat?, incoming, media? }
 *   { v: 1, origin, kind: 'pollVote', to, from, incoming }
 *   { v: 1, origin, kind: 'presence', to, from, presence }
 *   { v: 1, origin, kind: 'event',    to, event, media? }
 * `incoming` is the MESSAGE exactly as the sender's process built it (key, participant, pushName,
 * message, messageTimestamp, pollVote), so the recipient gets the key the sender replied with.
 * `media` carries the bytes as base64 (an EventMedia holds a `load()` function, not JSON).
 */
import type { CanonicalEvent, EventMedia } from '../port.js';
import type { IncomingMessage } from './session.js';

/** Where the span reports what it drops (a pino/Fastify logger fits). */
export interface SandboxSpanLogger {
  debug(details: object, message: string): void;
}

export type SpanPresence = 'composing' | 'recording' | 'paused';

export interface WireMedia {
  mimetype: string;
  fileName?: string;
  /** The bytes, base64. */
  data: string;
}

interface Base {
  v: 1;
  /** The process that published it (each ignores its own). */
  origin: string;
  /** The number whose linked instance receives it. */
  to: string;
}

export type SpanMessage =
  | (Base & { kind: 'message'; from: string; chat?: string; incoming: IncomingMessage; media?: WireMedia })
  | (Base & { kind: 'pollVote'; from: string; incoming: IncomingMessage })
  | (Base & { kind: 'presence'; from: string; presence: SpanPresence })
  | (Base & { kind: 'event'; event: CanonicalEvent; media?: WireMedia });

export async function mediaToWire(media: EventMedia): Promise<WireMedia> {
  const bytes = await media.load();
  return { mimetype: media.mimetype, ...(media.fileName ? { fileName: media.fileName } : {}), data: bytes.toString('base64') };
}

export function mediaFromWire(media: WireMedia): EventMedia {
  const bytes = Buffer.from(media.data, 'base64');
  return { mimetype: media.mimetype, ...(media.fileName ? { fileName: media.fileName } : {}), load: () => Promise.resolve(bytes) };
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';

function isWireMedia(value: unknown): value is WireMedia {
  return isObject(value) && isString(value.mimetype) && isString(value.data) && (value.fileName === undefined || isString(value.fileName));
}

function isIncoming(value: unknown): value is IncomingMessage {
  if (!isObject(value) || !isObject(value.key) || !isObject(value.message)) return false;
  const { key } = value;
  return (
    isString(key.remoteJid) &&
    typeof key.fromMe === 'boolean' &&
    isString(key.id) &&
    isString(value.pushName) &&
    typeof value.messageTimestamp === 'number' &&
    (value.participant === undefined || isString(value.participant))
  );
}

/** The message in `payload`, or undefined when it is not one this version understands. */
export function parseSpanMessage(payload: string): SpanMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (!isObject(value) || value.v !== 1 || !isString(value.origin) || !isString(value.to)) return undefined;
  if (value.media !== undefined && !isWireMedia(value.media)) return undefined;
  switch (value.kind) {
    case 'message':
      if (!isString(value.from) || !isIncoming(value.incoming) || (value.chat !== undefined && !isString(value.chat))) return undefined;
      break;
    case 'pollVote':
      if (!isString(value.from) || !isIncoming(value.incoming) || !isObject(value.incoming.pollVote)) return undefined;
      break;
    case 'presence':
      if (!isString(value.from) || !['composing', 'recording', 'paused'].includes(value.presence as string)) return undefined;
      break;
    case 'event':
      if (!isObject(value.event) || !isString(value.event.type) || !isObject(value.event.data)) return undefined;
      break;
    default:
      return undefined;
  }
  return value as unknown as SpanMessage;
}
