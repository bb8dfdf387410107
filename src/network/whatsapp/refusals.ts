/**
 * The one translation of WhatsApp's failures into Waygate's errors, for every call the driver makes
 * (sends, message actions, pairing, groups, communities, newsletters, users, chats, labels).
 *
 * WhatsApp answers a refused `<iq>` with `<iq type="error"><error code="403" text="forbidden"/></iq>`.
 * Baileys throws a Boom for it whose `data` is the code (plain queries) or whose status is the code
 * (metadata parsing, `w:mex` GraphQL errors). The codes mean the same in every namespace:
 * 400 bad-request, 401 not-authorized, 403 forbidden, 404 item-not-found, 406 not-acceptable,
 * 409 conflict, 410 gone, 419 resource-limit, 429 rate-overlimit, 500 internal-server-error.
 * A closed connection is a Boom with status 428 (closed) or 408 (timed out).
 *
 * This file imports nothing of the driver, so any part of it can use it without an import cycle.
 */
import { AppError, errors } from '../../errors.js';

/** What a refusal names: `notFound` what a 404 did not find (e.g. `group 123@g.us`), `refused` what a 401/403 refused. */
export interface RefusalText {
  notFound: string;
  refused: string;
}

export const DEFAULT_REFUSAL: RefusalText = {
  notFound: 'what WhatsApp was asked about was',
  refused: 'WhatsApp does not allow this to this account',
};

type BoomLike = Error & { isBoom?: boolean; output?: { statusCode?: number }; data?: unknown };

/** The WhatsApp error code of a refused query, or the status of a closed connection; undefined otherwise. */
export function waErrorCode(error: unknown): number | undefined {
  const boom = error as BoomLike | undefined;
  if (!boom || typeof boom !== 'object' || !boom.isBoom) return undefined;
  if (typeof boom.data === 'number' && Number.isFinite(boom.data)) return boom.data;
  const status = boom.output?.statusCode;
  // A Boom without an explicit code reports 500; connection failures keep their own codes (408, 428).
  return status === 500 && boom.data === undefined ? undefined : status;
}

/** Any failure of a network call as the API reports it: 4xx for refusals, 409 when the connection is not open, else 502. */
export function refusal(error: unknown, text: RefusalText = DEFAULT_REFUSAL): AppError {
  if (error instanceof AppError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const detail = message ? ` (WhatsApp: ${message})` : '';
  const code = waErrorCode(error);
  const refused = refusalFor(code, detail, text);
  if (refused) return refused;
  if (code === 428 || code === 408) return errors.connectionNotOpen(message);
  return errors.networkError(`WhatsApp refused the request: ${message}`);
}

/** The API error for a WhatsApp error code; undefined for codes that mean a network failure. */
export function refusalFor(code: number | undefined, detail: string, text: RefusalText = DEFAULT_REFUSAL): AppError | undefined {
  switch (code) {
    case 400:
      return errors.badRequest(`WhatsApp rejected the request as malformed${detail}`);
    case 401:
    case 403:
      return errors.forbidden(`${text.refused}${detail}`);
    case 404:
      return errors.notFoundText(`${text.notFound} not found${detail}`);
    case 406:
      return errors.badRequest(`WhatsApp did not accept the value${detail}`);
    case 409:
      return errors.conflict(`WhatsApp refused: conflicting state${detail}`);
    case 410:
      return errors.notFoundText(`${text.notFound} is gone (revoked or expired)${detail}`);
    case 419:
      return errors.conflict(`WhatsApp refused: a limit was reached${detail}`);
    case 429:
      return errors.networkRateLimited(detail);
    case undefined:
    default:
      return undefined;
  }
}

/** Runs one network call, translating its failure with `refusal`. */
export async function attempt<T>(call: () => Promise<T>, text: RefusalText = DEFAULT_REFUSAL): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw refusal(error, text);
  }
}
