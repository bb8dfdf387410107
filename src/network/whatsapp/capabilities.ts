/**
 * What the WhatsApp chat, user, label and call capabilities (chats.ts, users.ts, labels.ts,
 * calls.ts) get from their session, on top of the shared OperationsContext (operations.ts): the
 * instance, the creds, the state kept in the database, the message store and the event road.
 * Failures are mapped by refusals.ts (`attempt` / `refusal`), so a WhatsApp instance answers
 * with the same 4xx as a sandbox one.
 */
import type { AuthenticationCreds } from 'baileys';
import { errors } from '../../errors.js';
import { jidToNumber, type CanonicalEvent } from '../port.js';
import { normalise } from './addresses.js';
import type { OperationsContext } from './operations.js';
import { attempt, DEFAULT_REFUSAL, type RefusalText } from './refusals.js';
import type { ChatMessageSource, WhatsAppStateStore } from './state-store.js';

export interface WhatsAppLink extends OperationsContext {
  readonly instanceId: string;
  creds(): AuthenticationCreds;
  saveCreds(): Promise<void>;
  readonly state: WhatsAppStateStore;
  readonly messages: ChatMessageSource;
  emit(event: CanonicalEvent): Promise<void>;
  /** Unix seconds. */
  now(): number;
}

/** Runs one Baileys call, its failures mapped to the API's errors. */
export function wa<T>(run: () => Promise<T>, text: RefusalText = DEFAULT_REFUSAL): Promise<T> {
  return attempt(run, text);
}

/** This account's phone JID and number (after the link). */
export function ownAddress(link: WhatsAppLink): { jid: string; number: string } {
  const id = link.creds().me?.id;
  const jid = id ? normalise(id) : undefined;
  const number = jid ? jidToNumber(jid) : undefined;
  if (!jid || !number) throw errors.notConnected('not linked');
  return { jid, number };
}
