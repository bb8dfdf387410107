/**
 * What the WhatsApp driver's capability objects (groups, communities, newsletters, ...) share: the
 * session context they run in. WhatsApp's refusals are translated in refusals.ts.
 */
import type { WASocket } from 'baileys';
import { jidToNumber, type OutgoingMessage, type SentMessage } from '../port.js';
import { normalise, type LidDirectory } from './addresses.js';
import type { TtlCache } from './caches.js';

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

/** How a person appears in a capability result: phone JID and digits when known, else the LID. */
export function personOf(addresses: LidDirectory, jid: string, alt?: string | null): { jid: string; number: string } {
  const resolved = addresses.resolve(jid, alt);
  return { jid: resolved.jid, number: jidToNumber(resolved.jid) ?? '' };
}

export function isOwn(ctx: OperationsContext, jid: string | null | undefined): boolean {
  return Boolean(jid) && ctx.ownJids().includes(normalise(jid!));
}

/** Numbers as the network's phone JIDs. */
export function phoneJids(numbers: string[]): string[] {
  return [...new Set(numbers)].map((number) => `${number}@s.whatsapp.net`);
}
