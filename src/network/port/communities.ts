/** Port capability: Communities and their linked groups. */
import type { PageOf, PageRequest, SentMessage } from '../port.js';
import type { GroupInfo } from './groups.js';

export interface CommunityInfo {
  communityId: string;
  subject: string;
  description: string | null;
  owner: string | null;
  creation: number;
  /** The community's announcement group: every member is in it, only admins write. */
  announceGroupId: string;
  /** Linked groups (the announcement group not included). */
  groups: { groupId: string; subject: string }[];
  /** Members: admins plus participants of the linked groups. */
  size: number;
  role: 'admin' | 'member';
}

export interface CommunityOperations {
  create(subject: string, description?: string): Promise<CommunityInfo>;
  info(communityId: string): Promise<CommunityInfo>;
  list(page: PageRequest): Promise<PageOf<CommunityInfo>>;
  link(communityId: string, groupIds: string[]): Promise<CommunityInfo>;
  unlink(communityId: string, groupIds: string[]): Promise<CommunityInfo>;
  groups(communityId: string, page: PageRequest): Promise<PageOf<GroupInfo>>;
  /** Posts a text to the announcement group (admins only). */
  announce(communityId: string, text: string): Promise<SentMessage>;
}
