/**
 * People and this account's own profile on WhatsApp: the about text (USync status query), the
 * business profile (`w:biz`), profile pictures (`w:profile:picture`), privacy settings (`privacy`),
 * the block list (`blocklist`), the own name (an app-state push-name patch), about and picture, and
 * presence (`<presence>` nodes). Contacts come from what the driver kept of contact events: WhatsApp
 * has no query for the address book of the phone.
 */
import type { WABusinessProfile } from 'baileys';
import { errors } from '../../errors.js';
import {
  jidToNumber,
  toJid,
  type AddressPair,
  type BusinessProfile,
  type Contact,
  type ImageInput,
  type OwnProfile,
  type PageOf,
  type PageRequest,
  type PictureView,
  type PresenceView,
  type PrivacySettings,
  type UserInfo,
  type UserOperations,
} from '../port.js';
import { normalise } from './addresses.js';
import { personAddressOf, phoneJid } from '../addressing.js';
import { ownAddress, wa, type WhatsAppLink } from './capabilities.js';
import { pageOf } from '../paging.js';
import { refusal, waErrorCode } from './refusals.js';
import { isBusinessAccount } from './state-store.js';

/** Privacy settings and WhatsApp's category names (`<category name value/>`), both ways. */
const CATEGORIES = {
  lastSeen: 'last',
  online: 'online',
  profilePicture: 'profile',
  about: 'status',
  groupAdd: 'groupadd',
  readReceipts: 'readreceipts',
  calls: 'calladd',
} as const satisfies Record<keyof PrivacySettings, string>;

const ALLOWED: { [K in keyof PrivacySettings]: readonly PrivacySettings[K][] } = {
  lastSeen: ['all', 'contacts', 'contact_blacklist', 'none'],
  online: ['all', 'match_last_seen'],
  profilePicture: ['all', 'contacts', 'contact_blacklist', 'none'],
  about: ['all', 'contacts', 'contact_blacklist', 'none'],
  groupAdd: ['all', 'contacts', 'contact_blacklist'],
  readReceipts: ['all', 'none'],
  calls: ['all', 'known'],
};

function businessProfileOf(profile: WABusinessProfile | void): BusinessProfile | null {
  if (!profile) return null;
  return {
    description: profile.description || null,
    category: profile.category ?? null,
    email: profile.email ?? null,
    website: [...profile.website],
    address: profile.address ?? null,
  };
}

/** The about text of a USync status answer (WhatsApp sends an empty text for none, 401 when hidden). */
function aboutOf(result: readonly Record<string, unknown>[] | undefined): { text: string | null; setAt: number | null } {
  const status: unknown = result?.[0]?.status;
  if (!status || typeof status !== 'object') return { text: null, setAt: null };
  const { status: text, setAt } = status as { status?: unknown; setAt?: unknown };
  if (typeof text !== 'string' || text.length === 0) return { text: null, setAt: null };
  return { text, setAt: setAt instanceof Date && setAt.getTime() > 0 ? Math.floor(setAt.getTime() / 1000) : null };
}

/** WhatsApp answers 404 (no picture) or 401 (hidden by privacy) for a picture one cannot see. */
function isNoPicture(error: unknown): boolean {
  const code = waErrorCode(error);
  return code === 404 || code === 401 || code === 403;
}

export class WhatsAppUsers implements UserOperations {
  constructor(private readonly link: WhatsAppLink) {}

  async info(number: string): Promise<UserInfo> {
    const jid = await this.onNetwork(number);
    const socket = this.link.socket();
    const [status, pictureUrl, business, blocked, contact] = await Promise.all([
      wa(() => socket.fetchStatus(jid)),
      this.pictureUrl(jid),
      wa(() => socket.getBusinessProfile(jid)),
      this.blockedJids(),
      this.link.state.contact(this.link.instanceId, jid),
    ]);
    const about = aboutOf(status);
    const businessProfile = businessProfileOf(business);
    return {
      jid,
      number: jidToNumber(jid) ?? number,
      name: contact?.notify ?? contact?.verified_name ?? contact?.name ?? null,
      about: about.text,
      aboutTimestamp: about.setAt,
      pictureUrl,
      isBusiness: businessProfile !== null || Boolean(contact?.verified_name),
      businessProfile,
      blocked: blocked.has(jid),
    };
  }

  async avatar(number: string): Promise<PictureView> {
    const jid = await this.onNetwork(number);
    // Baileys gives the URL only; the picture's id stays unknown (null).
    return { jid, pictureId: null, url: await this.pictureUrl(jid) };
  }

  async contacts(page: PageRequest): Promise<PageOf<Contact>> {
    const { rows, total } = await this.link.state.listContacts(this.link.instanceId, page);
    const items = rows.flatMap((row) => {
      const number = jidToNumber(row.jid);
      return number
        ? [{ jid: row.jid, number, name: row.name ?? row.notify ?? row.verified_name, isBusiness: row.verified_name !== null }]
        : [];
    });
    return { items, total };
  }

  async resolveAddresses(ids: string[]): Promise<AddressPair[]> {
    const asked = ids.map((id) => {
      const address = personAddressOf(id);
      return { id, lid: 'lid' in address ? address.lid : null, phone: 'number' in address ? toJid(address.number) : null };
    });
    const directory = this.link.addresses;
    await directory.prefetch(asked.map((a) => a.lid ?? a.phone));
    const lids = asked.flatMap((a) => (a.lid && !directory.phoneOf(a.lid) ? [a.lid] : []));
    const phones = asked.flatMap((a) => (a.phone && !directory.lidOf(a.phone) ? [a.phone] : []));
    if (lids.length > 0 || phones.length > 0) {
      // Baileys' own mapping store may know a LID the directory has not seen; a phone's LID is asked
      // of WhatsApp (USync). Only the phone's owner can reveal the number behind an unknown LID.
      const mapping = this.link.socket().signalRepository.lidMapping;
      const learnt = [
        ...(lids.length > 0 ? ((await wa(() => mapping.getPNsForLIDs(lids))) ?? []) : []),
        ...(phones.length > 0 ? ((await wa(() => mapping.getLIDsForPNs(phones))) ?? []) : []),
      ];
      await directory.remember(learnt);
    }
    return asked.map(({ id, lid, phone }) => {
      const jid = phone ?? (lid ? (directory.phoneOf(lid) ?? null) : null);
      return { id, jid, number: jid ? (jidToNumber(jid) ?? null) : null, lid: lid ?? (phone ? (directory.lidOf(phone) ?? null) : null) };
    });
  }

  async privacy(): Promise<PrivacySettings> {
    const settings = await wa(() => this.link.socket().fetchPrivacySettings(true));
    const read = <K extends keyof PrivacySettings>(key: K): PrivacySettings[K] => {
      const value = settings[CATEGORIES[key]] as PrivacySettings[K] | undefined;
      if (value === undefined || !ALLOWED[key].includes(value)) {
        throw errors.networkError(`WhatsApp sent no usable privacy setting ${CATEGORIES[key]} (${String(value)})`);
      }
      return value;
    };
    return {
      lastSeen: read('lastSeen'),
      online: read('online'),
      profilePicture: read('profilePicture'),
      about: read('about'),
      groupAdd: read('groupAdd'),
      readReceipts: read('readReceipts'),
      calls: read('calls'),
    };
  }

  async setPrivacy(patch: Partial<PrivacySettings>): Promise<PrivacySettings> {
    const socket = this.link.socket();
    const updates: { [K in keyof PrivacySettings]: (value: PrivacySettings[K]) => Promise<void> } = {
      lastSeen: (v) => socket.updateLastSeenPrivacy(v),
      online: (v) => socket.updateOnlinePrivacy(v),
      profilePicture: (v) => socket.updateProfilePicturePrivacy(v),
      about: (v) => socket.updateStatusPrivacy(v),
      groupAdd: (v) => socket.updateGroupsAddPrivacy(v),
      readReceipts: (v) => socket.updateReadReceiptsPrivacy(v),
      calls: (v) => socket.updateCallPrivacy(v),
    };
    for (const key of Object.keys(CATEGORIES) as (keyof PrivacySettings)[]) {
      const value = patch[key];
      if (value === undefined) continue;
      await wa(() => (updates[key] as (v: string) => Promise<void>)(value));
    }
    return this.privacy();
  }

  async block(number: string): Promise<void> {
    await this.setBlocked(number, 'block');
  }

  async unblock(number: string): Promise<void> {
    await this.setBlocked(number, 'unblock');
  }

  async blocklist(page: PageRequest): Promise<PageOf<{ jid: string; number: string }>> {
    const all = [...(await this.blockedJids())].flatMap((jid) => {
      const number = jidToNumber(jid);
      return number ? [{ jid, number }] : [];
    });
    return pageOf(all, page);
  }

  async profile(): Promise<OwnProfile> {
    const { jid, number } = ownAddress(this.link);
    const creds = this.link.creds();
    const socket = this.link.socket();
    const isBusiness = isBusinessAccount(creds.platform);
    const [status, pictureUrl, business] = await Promise.all([
      wa(() => socket.fetchStatus(jid)),
      this.pictureUrl(jid),
      isBusiness ? wa(() => socket.getBusinessProfile(jid)) : Promise.resolve(undefined),
    ]);
    return {
      jid,
      number,
      name: creds.me?.name ?? null,
      about: aboutOf(status).text,
      pictureUrl,
      isBusiness,
      businessProfile: businessProfileOf(business),
    };
  }

  async setName(name: string): Promise<OwnProfile> {
    await wa(() => this.link.socket().updateProfileName(name));
    const me = this.link.creds().me;
    if (me) {
      me.name = name;
      await this.link.saveCreds();
    }
    return this.profile();
  }

  async setAbout(about: string): Promise<OwnProfile> {
    await wa(() => this.link.socket().updateProfileStatus(about));
    return this.profile();
  }

  async setPicture(image: ImageInput): Promise<OwnProfile> {
    const { jid } = ownAddress(this.link);
    await wa(() => this.link.socket().updateProfilePicture(jid, image.data));
    return this.profile();
  }

  async removePicture(): Promise<OwnProfile> {
    const { jid } = ownAddress(this.link);
    await wa(() => this.link.socket().removeProfilePicture(jid));
    return this.profile();
  }

  /**
   * Subscribes to the person's presence. WhatsApp answers with a `<presence>` node later, which
   * arrives as a PRESENCE event; nothing is known at once, so the answer is null.
   */
  async subscribePresence(number: string): Promise<PresenceView | null> {
    const jid = await this.onNetwork(number);
    await wa(() => this.link.socket().presenceSubscribe(jid));
    return null;
  }

  async setPresence(presence: 'available' | 'unavailable'): Promise<void> {
    // WhatsApp's presence stanza carries the push name; Baileys drops it silently without one.
    if (!this.link.creds().me?.name)
      throw errors.conflict('this account has no profile name yet; set one (POST /user/profile/name) before its presence');
    await wa(() => this.link.socket().sendPresenceUpdate(presence));
  }

  private async setBlocked(number: string, action: 'block' | 'unblock'): Promise<void> {
    const jid = phoneJid(number);
    if (jid === ownAddress(this.link).jid) throw errors.badRequest('an account cannot block itself');
    await wa(() => this.link.socket().updateBlockStatus(jid, action));
    await this.link.emit({ type: 'CONTACT', data: { id: jid, action } });
  }

  /** The block list as phone JIDs where known (WhatsApp lists LIDs more and more). */
  private async blockedJids(): Promise<Set<string>> {
    const listed = await wa(() => this.link.socket().fetchBlocklist());
    const jids = listed.filter((jid): jid is string => typeof jid === 'string');
    await this.link.addresses.prefetch(jids);
    return new Set(jids.map((jid) => this.link.addresses.resolve(normalise(jid)).jid));
  }

  /** 404 for a number without a WhatsApp account (as the sandbox); the JID WhatsApp knows it by. */
  private async onNetwork(number: string): Promise<string> {
    const jid = phoneJid(number);
    const found = (await wa(() => this.link.socket().onWhatsApp(jid))) ?? [];
    const match = found.find((r) => r.exists);
    if (!match) throw errors.notFoundText(`number ${number} is not on the network`);
    return normalise(match.jid);
  }

  private async pictureUrl(jid: string): Promise<string | null> {
    try {
      return (await this.link.socket().profilePictureUrl(jid, 'image')) ?? null;
    } catch (error) {
      if (isNoPicture(error)) return null;
      throw refusal(error);
    }
  }
}
