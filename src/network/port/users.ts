/** Port capability: Users: profiles, contacts, privacy, presence, blocking. */
import type { ImageInput, PageOf, PageRequest, PictureView } from '../port.js';

export interface BusinessProfile {
  description: string | null;
  category: string | null;
  email: string | null;
  website: string[];
  address: string | null;
}

export interface UserInfo {
  jid: string;
  number: string;
  /** Profile name (push name) as the user set it. */
  name: string | null;
  about: string | null;
  aboutTimestamp: number | null;
  pictureUrl: string | null;
  isBusiness: boolean;
  businessProfile: BusinessProfile | null;
  /** Whether this account blocked the user. */
  blocked: boolean;
}

export interface Contact {
  jid: string;
  number: string;
  name: string | null;
  isBusiness: boolean;
}

/**
 * One address resolved both ways: a phone number and the hidden id (LID, `<id>@lid`) WhatsApp uses
 * for the same person. Either side is null when the network has not told this account.
 */
export interface AddressPair {
  /** The id as asked (digits, a phone JID or a LID). */
  id: string;
  /** The phone JID (`<digits>@s.whatsapp.net`), when known. */
  jid: string | null;
  number: string | null;
  /** The LID (`<id>@lid`), when known. */
  lid: string | null;
}

export type PrivacyAudience = 'all' | 'contacts' | 'contact_blacklist' | 'none';

export interface PrivacySettings {
  lastSeen: PrivacyAudience;
  online: 'all' | 'match_last_seen';
  profilePicture: PrivacyAudience;
  about: PrivacyAudience;
  groupAdd: 'all' | 'contacts' | 'contact_blacklist';
  readReceipts: 'all' | 'none';
  calls: 'all' | 'known';
}

export interface OwnProfile {
  jid: string;
  number: string;
  name: string | null;
  about: string | null;
  pictureUrl: string | null;
  isBusiness: boolean;
  businessProfile: BusinessProfile | null;
}

export interface PresenceView {
  jid: string;
  presence: 'available' | 'unavailable';
  lastSeen: number | null;
}

export interface UserOperations {
  info(number: string): Promise<UserInfo>;
  avatar(number: string): Promise<PictureView>;
  contacts(page: PageRequest): Promise<PageOf<Contact>>;
  /** Phone number <-> LID for each id (digits, phone JID or LID), in the order asked. */
  resolveAddresses(ids: string[]): Promise<AddressPair[]>;
  privacy(): Promise<PrivacySettings>;
  setPrivacy(patch: Partial<PrivacySettings>): Promise<PrivacySettings>;
  block(number: string): Promise<void>;
  unblock(number: string): Promise<void>;
  blocklist(page: PageRequest): Promise<PageOf<{ jid: string; number: string }>>;
  profile(): Promise<OwnProfile>;
  setName(name: string): Promise<OwnProfile>;
  setAbout(about: string): Promise<OwnProfile>;
  setPicture(image: ImageInput): Promise<OwnProfile>;
  removePicture(): Promise<OwnProfile>;
  /** PRESENCE events of `number` follow; the current one (when visible) comes at once. */
  subscribePresence(number: string): Promise<PresenceView | null>;
  setPresence(presence: 'available' | 'unavailable'): Promise<void>;
}
