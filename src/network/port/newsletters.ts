/** Port capability: Newsletters (channels): create, follow, post. */
import type { ImageInput, MessageKey, PageOf, PageRequest, SentMessage } from '../port.js';

export type NewsletterRole = 'owner' | 'subscriber' | 'guest';

export interface NewsletterInfo {
  newsletterId: string;
  name: string;
  description: string | null;
  inviteCode: string;
  inviteLink: string;
  pictureUrl: string | null;
  role: NewsletterRole;
  muted: boolean;
  followers: number;
  verified: boolean;
  creation: number;
}

export interface NewsletterMessage {
  key: MessageKey;
  /** The network's sequence number of the post in its newsletter. */
  serverId: number;
  message: Record<string, unknown>;
  messageTimestamp: number;
}

export interface NewsletterOperations {
  create(input: { name: string; description?: string; picture?: ImageInput }): Promise<NewsletterInfo>;
  list(page: PageRequest, role?: NewsletterRole): Promise<PageOf<NewsletterInfo>>;
  info(ref: { newsletterId: string } | { inviteCode: string }): Promise<NewsletterInfo>;
  update(newsletterId: string, changes: { name?: string; description?: string; picture?: ImageInput | null }): Promise<NewsletterInfo>;
  delete(newsletterId: string): Promise<void>;
  follow(newsletterId: string): Promise<NewsletterInfo>;
  unfollow(newsletterId: string): Promise<NewsletterInfo>;
  setMuted(newsletterId: string, muted: boolean): Promise<NewsletterInfo>;
  /** Posts, newest first. */
  messages(newsletterId: string, page: PageRequest): Promise<PageOf<NewsletterMessage>>;
  /** Posts a text (owner only); followers get it as a MESSAGE. */
  send(newsletterId: string, text: string): Promise<SentMessage & { serverId: number }>;
}
