/**
 * People on the sandbox network: profiles (name, about, picture, business profile) seen through
 * their owners' privacy settings, this account's contacts, blocks and presence subscriptions.
 */
import { errors } from '../../errors.js';
import {
  toJid,
  type AddressPair,
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
  type EventData,
} from '../port.js';
import { pictureUrl, sandboxLidOf, storePicture, type AccountState, type SandboxWorld } from './world.js';
import { personAddressOf } from '../addressing.js';
import { pageOf } from '../paging.js';

export class SandboxUsers implements UserOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async info(number: string): Promise<UserInfo> {
    const viewer = this.me();
    this.requireOnNetwork(number);
    const account = this.world.findAccount(number);
    const seesAbout = this.world.allows(number, viewer, account?.privacy.about ?? 'all');
    const seesPicture = this.world.allows(number, viewer, account?.privacy.profilePicture ?? 'all');
    return {
      jid: toJid(number),
      number,
      name: this.world.displayName(number),
      about: seesAbout ? (account?.about ?? null) : null,
      aboutTimestamp: seesAbout ? (account?.aboutTimestamp ?? null) : null,
      pictureUrl: seesPicture ? pictureUrl(account?.picture ?? null) : null,
      isBusiness: Boolean(account?.business),
      businessProfile: account?.business ? { ...account.business, website: [...account.business.website] } : null,
      blocked: this.world.hasBlocked(viewer, number),
    };
  }

  async avatar(number: string): Promise<PictureView> {
    const viewer = this.me();
    this.requireOnNetwork(number);
    const account = this.world.findAccount(number);
    const picture = account?.picture ?? null;
    const visible = picture !== null && this.world.allows(number, viewer, account?.privacy.profilePicture ?? 'all');
    return { jid: toJid(number), pictureId: visible ? picture.pictureId : null, url: visible ? pictureUrl(picture) : null };
  }

  async resolveAddresses(ids: string[]): Promise<AddressPair[]> {
    return ids.map((id) => {
      const address = personAddressOf(id);
      const number = 'number' in address ? address.number : (this.world.numberOfLid(address.lid) ?? null);
      const onNetwork = number !== null && this.world.isOnNetwork(number);
      return {
        id,
        jid: number === null ? null : toJid(number),
        number,
        lid: 'lid' in address ? address.lid : onNetwork ? sandboxLidOf(number) : null,
      };
    });
  }

  async contacts(page: PageRequest): Promise<PageOf<Contact>> {
    const owner = this.me();
    await this.world.hydrate(owner);
    const contacts = this.world
      .contactsOf(owner)
      .map((number) => ({
        jid: toJid(number),
        number,
        name: this.world.displayName(number),
        isBusiness: Boolean(this.world.findAccount(number)?.business),
      }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.number.localeCompare(b.number));
    return pageOf(contacts, page);
  }

  async privacy(): Promise<PrivacySettings> {
    return { ...this.world.account(this.me()).privacy };
  }

  async setPrivacy(patch: Partial<PrivacySettings>): Promise<PrivacySettings> {
    const account = this.world.account(this.me());
    account.privacy = { ...account.privacy, ...patch };
    await this.world.saveAccount(account);
    return { ...account.privacy };
  }

  async block(number: string): Promise<void> {
    const account = this.world.account(this.me());
    if (number === account.number) throw errors.badRequest('an account cannot block itself');
    if (account.blocked.includes(number)) return;
    account.blocked.push(number);
    await this.world.saveAccount(account);
    await this.world.emitTo(account.number, { type: 'CONTACT', data: { id: toJid(number), action: 'block' } });
  }

  async unblock(number: string): Promise<void> {
    const account = this.world.account(this.me());
    if (!account.blocked.includes(number)) return;
    account.blocked = account.blocked.filter((n) => n !== number);
    await this.world.saveAccount(account);
    await this.world.emitTo(account.number, { type: 'CONTACT', data: { id: toJid(number), action: 'unblock' } });
  }

  async blocklist(page: PageRequest): Promise<PageOf<{ jid: string; number: string }>> {
    const account = this.world.account(this.me());
    return pageOf(
      account.blocked.map((number) => ({ jid: toJid(number), number })),
      page,
    );
  }

  async profile(): Promise<OwnProfile> {
    return this.ownProfile(this.world.account(this.me()));
  }

  async setName(name: string): Promise<OwnProfile> {
    const account = this.world.account(this.me());
    account.pushName = name;
    await this.world.saveAccount(account);
    await this.tellWatchers(account, 'all', { pushName: name });
    return this.ownProfile(account);
  }

  async setAbout(about: string): Promise<OwnProfile> {
    const account = this.world.account(this.me());
    account.about = about;
    account.aboutTimestamp = this.world.now();
    await this.world.saveAccount(account);
    await this.tellWatchers(account, account.privacy.about, { about });
    return this.ownProfile(account);
  }

  async setPicture(image: ImageInput): Promise<OwnProfile> {
    const account = this.world.account(this.me());
    account.picture = storePicture(image);
    await this.world.saveAccount(account);
    await this.tellWatchers(account, account.privacy.profilePicture, { pictureId: account.picture.pictureId });
    return this.ownProfile(account);
  }

  async removePicture(): Promise<OwnProfile> {
    const account = this.world.account(this.me());
    if (!account.picture) throw errors.notFound('profile picture');
    account.picture = null;
    await this.world.saveAccount(account);
    await this.tellWatchers(account, account.privacy.profilePicture, { pictureId: null });
    return this.ownProfile(account);
  }

  async subscribePresence(number: string): Promise<PresenceView | null> {
    const subscriber = this.me();
    this.requireOnNetwork(number);
    this.world.subscribePresence(subscriber, number);
    const view = this.visiblePresence(number, subscriber);
    if (view) await this.world.emitTo(subscriber, { type: 'PRESENCE', data: presenceData(view) });
    return view;
  }

  async setPresence(presence: 'available' | 'unavailable'): Promise<void> {
    const number = this.me();
    const lastSeen = presence === 'unavailable' ? this.world.now() : (this.world.presenceOf(number)?.lastSeen ?? null);
    const subscribers = this.world.setPresence(number, { presence, lastSeen });
    for (const subscriber of subscribers) {
      const view = this.visiblePresence(number, subscriber);
      if (view) await this.world.emitTo(subscriber, { type: 'PRESENCE', data: presenceData(view) });
    }
  }

  /** What `viewer` may see of `number`'s presence: online per `online`, last seen per `lastSeen`. */
  private visiblePresence(number: string, viewer: string): PresenceView | null {
    const state = this.world.presenceOf(number);
    if (!state || this.world.hasBlocked(number, viewer)) return null;
    const privacy = this.world.findAccount(number)?.privacy;
    const seesLastSeen = this.world.allows(number, viewer, privacy?.lastSeen ?? 'all');
    const seesOnline = privacy?.online === 'match_last_seen' ? seesLastSeen : true;
    if (state.presence === 'available' && !seesOnline) return null;
    return { jid: toJid(number), presence: state.presence, lastSeen: seesLastSeen ? state.lastSeen : null };
  }

  private async tellWatchers(account: AccountState, audience: PrivacySettings['about'], changes: Record<string, unknown>): Promise<void> {
    const watchers = this.world.watchersOf(account.number).filter((n) => this.world.allows(account.number, n, audience));
    await this.world.emitToAll(watchers, { type: 'CONTACT', data: { id: toJid(account.number), action: 'update', ...changes } });
  }

  private ownProfile(account: AccountState): OwnProfile {
    return {
      jid: toJid(account.number),
      number: account.number,
      name: this.world.displayName(account.number),
      about: account.about,
      pictureUrl: pictureUrl(account.picture),
      isBusiness: Boolean(account.business),
      businessProfile: account.business ? { ...account.business, website: [...account.business.website] } : null,
    };
  }

  private requireOnNetwork(number: string): void {
    if (!this.world.isOnNetwork(number)) throw errors.notFoundText(`number ${number} is not on the network`);
  }
}

function presenceData(view: PresenceView): EventData<'PRESENCE'> {
  return { id: view.jid, presence: view.presence, ...(view.lastSeen !== null ? { lastSeen: view.lastSeen } : {}) };
}
