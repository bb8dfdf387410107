/**
 * What the WhatsApp driver's capability objects (groups, communities, newsletters, ...) share: the
 * session context they run in, and the translation of WhatsApp's refusals into Waygate's errors.
 *
 * WhatsApp answers a refused `<iq>` with `<iq type="error"><error code="403" text="forbidden"/></iq>`.
 * Baileys throws a Boom for it whose `data` is the code (plain queries) or whose status is the code
 * (metadata parsing, `w:mex` GraphQL errors). The codes mean the same in every namespace:
 * 400 bad-request, 401 not-authorized, 403 forbidden, 404 item-not-found, 406 not-acceptable,
 * 409 conflict, 410 gone, 419 resource-limit, 429 rate-overlimit, 500 internal-server-error.
 */
import type { WASocket } from 'baileys';
import { AppError, errors } from '../../errors.js';
import { jidToNumber, type OutgoingMessage, type PageOf, type PageRequest, type SentMessage } from '../port.js';
import { normalise, type LidDirectory } from './addresses.js';
import type { TtlCache } from './caches.js';
import { networkError } from './session.js';

/** What a capability object gets from its session. */
export interface OperationsContext {
  /** The open socket; throws 409 instance_not_connected when the connection is not open. */
  socket(): WASocket;
  addresses: LidDirectory;
  /** The session's group metadata cache (the one Baileys reads through `cachedGroupMetadata`). */
  groupCache: TtlCache;
  /** This account's own addresses (phone JID and LID, without device). */
  ownJids(): string[];
  /** The session's send: stores the message and emits SEND_MESSAGE. */
  send(message: OutgoingMessage): Promise<SentMessage>;
}

type BoomLike = Error & { isBoom?: boolean; output?: { statusCode?: number }; data?: unknown };

/** The WhatsApp error code of a refused query, when the failure is one. */
export function waErrorCode(error: unknown): number | undefined {
  const boom = error as BoomLike | undefined;
  if (!boom || typeof boom !== 'object' || !boom.isBoom) return undefined;
  if (typeof boom.data === 'number' && Number.isFinite(boom.data)) return boom.data;
  const status = boom.output?.statusCode;
  // A Boom without an explicit code reports 500; connection failures keep their own codes (408, 428).
  return status === 500 && boom.data === undefined ? undefined : status;
}

/**
 * A failure of a query as the API reports it. `notFound` names what a 404 did not find (e.g.
 * `group 123@g.us`); `refused` says what a 401/403 refused (e.g. `only group admins can ...`).
 */
export function refusal(error: unknown, text: { notFound: string; refused: string }): AppError {
  if (error instanceof AppError) return error;
  const detail = error instanceof Error && error.message ? ` (WhatsApp: ${error.message})` : '';
  return refusalFor(waErrorCode(error), detail, text) ?? networkError(error);
}

/** The API error for a WhatsApp error code; undefined for codes that mean a network failure. */
export function refusalFor(code: number | undefined, detail: string, text: { notFound: string; refused: string }): AppError | undefined {
  switch (code) {
    case 400:
      return errors.badRequest(`WhatsApp rejected the request as malformed${detail}`);
    case 401:
    case 403:
      return errors.forbidden(`${text.refused}${detail}`);
    case 404:
      return new AppError('not_found', 404, `${text.notFound} not found${detail}`);
    case 406:
      return errors.badRequest(`WhatsApp did not accept the value${detail}`);
    case 409:
      return errors.conflict(`WhatsApp refused: conflicting state${detail}`);
    case 410:
      return new AppError('not_found', 404, `${text.notFound} is gone (revoked or expired)${detail}`);
    case 419:
      return errors.conflict(`WhatsApp refused: a limit was reached${detail}`);
    case 429:
      return new AppError('network_rate_limited', 429, `WhatsApp rate-limited this account; try again later${detail}`);
    case undefined:
    default:
      return undefined;
  }
}

/** Runs one network call, translating its failure with `refusal`. */
export async function attempt<T>(call: () => Promise<T>, text: { notFound: string; refused: string }): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw refusal(error, text);
  }
}

/** How a person appears in a capability result: phone JID and digits when known, else the LID. */
export function personOf(addresses: LidDirectory, jid: string, alt?: string | null): { jid: string; number: string } {
  const resolved = addresses.resolve(jid, alt);
  return { jid: resolved.jid, number: jidToNumber(resolved.jid) ?? '' };
}

export function isOwn(ctx: OperationsContext, jid: string | null | undefined): boolean {
  return Boolean(jid) && ctx.ownJids().includes(normalise(jid!));
}

/** One page of a list the network returns whole. */
export function pageOf<T>(all: T[], page: PageRequest): PageOf<T> {
  return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
}

/** Numbers as the network's phone JIDs. */
export function phoneJids(numbers: string[]): string[] {
  return [...new Set(numbers)].map((number) => `${number}@s.whatsapp.net`);
}
