/**
 * Addresses on the WhatsApp network. People are known by a phone address (`<digits>@s.whatsapp.net`)
 * and, more and more, by a hidden id (`<id>@lid`). The LidDirectory remembers which LID stands for
 * which number (learnt from message keys, history sync, contacts and Baileys' `lid-mapping.update`),
 * persists it, and lets translation put the phone address in events whenever it is known.
 */
import { jidDecode, jidNormalizedUser } from 'baileys';
import { BoundedMap } from '../../bounded-maps.js';
import { errors } from '../../errors.js';
import { isPhoneNumber } from '../addressing.js';
import { USER_SERVER } from '../port.js';
import type { LidPair, WhatsAppAuthStore } from './auth-store.js';

export const LID_SERVER = 'lid';

export function isLidJid(jid: string | null | undefined): jid is string {
  return typeof jid === 'string' && /@(hosted\.)?lid$/.test(jid);
}

export function isPhoneJid(jid: string | null | undefined): jid is string {
  return typeof jid === 'string' && /@(s\.whatsapp\.net|hosted)$/.test(jid);
}

/** `5511999999999:7@s.whatsapp.net` -> `5511999999999`; undefined for other kinds of address. */
export function userOf(jid: string | null | undefined): string | undefined {
  if (!jid) return undefined;
  return jidDecode(jid)?.user;
}

/** Strips the device part: `5511999999999:7@s.whatsapp.net` -> `5511999999999@s.whatsapp.net`. */
export function normalise(jid: string): string {
  return jidNormalizedUser(jid) || jid;
}

/**
 * The recipient JID of a send: digits (a phone number), or any full address the network knows
 * (`@s.whatsapp.net`, `@lid`, `@g.us`, `@newsletter`, `@broadcast`). Everything else is a 400.
 */
export function recipientJid(to: string): string {
  const trimmed = to.trim();
  if (isPhoneNumber(trimmed)) return `${trimmed}@${USER_SERVER}`;
  const number = /^(\d+)(:\d+)?@s\.whatsapp\.net$/.exec(trimmed)?.[1];
  if (number && isPhoneNumber(number)) return normalise(trimmed);
  if (/^\d{1,25}(:\d+)?@lid$/.test(trimmed)) return normalise(trimmed);
  if (/^\d+(-\d+)?@g\.us$/.test(trimmed)) return trimmed;
  if (/^\d+@newsletter$/.test(trimmed)) return trimmed;
  if (trimmed === 'status@broadcast' || /^\d+@broadcast$/.test(trimmed)) return trimmed;
  throw errors.badRequest(`not a WhatsApp address: ${to} (digits with country code, or a full JID)`);
}

/** How an event names a person: the phone address when known, and the LID when there is one. */
export interface ResolvedAddress {
  jid: string;
  lid?: string;
}

export class LidDirectory {
  private readonly phoneByLid: BoundedMap<string, string>;
  private readonly lidByPhone: BoundedMap<string, string>;
  /**
   * Users looked up and not found: not asked again until learnt. A session's directory is the only
   * writer of its instance's mapping, so what it has not learnt since is still not there. (A group
   * whose members write by LID, and whose phones are hidden, asked the database at every message.)
   */
  private readonly unknownLids: BoundedMap<string, true>;
  private readonly unknownPhones: BoundedMap<string, true>;

  constructor(
    private readonly store: WhatsAppAuthStore,
    private readonly instanceId: string,
    cacheSize = 20_000,
  ) {
    this.phoneByLid = new BoundedMap(cacheSize);
    this.lidByPhone = new BoundedMap(cacheSize);
    this.unknownLids = new BoundedMap(cacheSize);
    this.unknownPhones = new BoundedMap(cacheSize);
  }

  /** Learns pairs of full JIDs (either order); persists only what is new. */
  async remember(pairs: { lid?: string | null; pn?: string | null }[]): Promise<void> {
    const users: LidPair[] = [];
    for (const pair of pairs) {
      let { lid, pn } = pair;
      if (isPhoneJid(lid) && isLidJid(pn)) [lid, pn] = [pn, lid];
      if (!isLidJid(lid) || !isPhoneJid(pn)) continue;
      const lidUser = userOf(lid);
      const pnUser = userOf(pn);
      if (lidUser && pnUser) users.push({ lid: lidUser, pn: pnUser });
    }
    await this.rememberUsers(users);
  }

  /** Learns pairs of user parts (as Baileys stores them); persists only what is new. */
  async rememberUsers(pairs: LidPair[]): Promise<void> {
    const fresh: LidPair[] = [];
    for (const pair of pairs) {
      if (this.phoneByLid.get(pair.lid) === pair.pn) continue;
      this.learn(pair.lid, pair.pn);
      fresh.push(pair);
    }
    if (fresh.length > 0) await this.store.saveLidPairs(this.instanceId, fresh);
  }

  /** Loads the mapping of these addresses into memory, so `resolve` can answer synchronously. */
  async prefetch(jids: Iterable<string | null | undefined>): Promise<void> {
    const lids = new Set<string>();
    const phones = new Set<string>();
    for (const jid of jids) {
      const user = userOf(jid);
      if (!user) continue;
      if (isLidJid(jid) && !this.phoneByLid.has(user) && !this.unknownLids.has(user)) lids.add(user);
      if (isPhoneJid(jid) && !this.lidByPhone.has(user) && !this.unknownPhones.has(user)) phones.add(user);
    }
    if (lids.size === 0 && phones.size === 0) return;
    const found = [
      ...(lids.size ? await this.store.findPhones(this.instanceId, [...lids]) : []),
      ...(phones.size ? await this.store.findLids(this.instanceId, [...phones]) : []),
    ];
    for (const pair of found) this.learn(pair.lid, pair.pn);
    for (const lid of lids) if (!this.phoneByLid.has(lid)) this.unknownLids.set(lid, true);
    for (const phone of phones) if (!this.lidByPhone.has(phone)) this.unknownPhones.set(phone, true);
  }

  private learn(lidUser: string, pnUser: string): void {
    this.phoneByLid.set(lidUser, pnUser);
    this.lidByPhone.set(pnUser, lidUser);
    this.unknownLids.delete(lidUser);
    this.unknownPhones.delete(pnUser);
  }

  /** The phone address of a LID, if known (after `prefetch` or `remember`). */
  phoneOf(lidJid: string): string | undefined {
    const user = userOf(lidJid);
    const pn = user ? this.phoneByLid.get(user) : undefined;
    return pn ? `${pn}@${USER_SERVER}` : undefined;
  }

  lidOf(phoneJid: string): string | undefined {
    const user = userOf(phoneJid);
    const lid = user ? this.lidByPhone.get(user) : undefined;
    return lid ? `${lid}@${LID_SERVER}` : undefined;
  }

  /**
   * How to show an address: phone JIDs stay; a LID becomes its phone JID when known (or `alt`, the
   * phone address the network sent alongside) and is kept in `lid`. Groups and others pass through.
   */
  resolve(jid: string, alt?: string | null): ResolvedAddress {
    const plain = normalise(jid);
    if (isLidJid(plain)) {
      const phone = isPhoneJid(alt) ? normalise(alt) : this.phoneOf(plain);
      return phone ? { jid: phone, lid: plain } : { jid: plain, lid: plain };
    }
    if (isPhoneJid(plain)) {
      const lid = isLidJid(alt) ? normalise(alt) : this.lidOf(plain);
      return lid ? { jid: plain, lid } : { jid: plain };
    }
    return { jid: plain };
  }

  clearMemory(): void {
    this.phoneByLid.clear();
    this.lidByPhone.clear();
    this.unknownLids.clear();
    this.unknownPhones.clear();
  }
}
