/** Port capability: Groups: create, participants, settings, invites, join requests. */
import type { ImageInput, PageOf, PageRequest, PictureView } from '../port.js';

export type GroupRole = 'superadmin' | 'admin' | 'member';

export interface GroupParticipant {
  jid: string;
  number: string;
  role: GroupRole;
}

export interface GroupSettings {
  /** Only admins send messages. */
  announce: boolean;
  /** Only admins edit subject, description and picture. */
  locked: boolean;
  /** New members through an invite link wait for an admin's approval. */
  joinApproval: boolean;
  /** Disappearing messages after this many seconds; 0 is off. */
  ephemeral: number;
  /** Who may add participants. */
  memberAddMode: 'admins' | 'all';
}

export interface GroupInfo extends GroupSettings {
  groupId: string;
  subject: string;
  subjectOwner: string | null;
  subjectTimestamp: number | null;
  description: string | null;
  owner: string | null;
  creation: number;
  size: number;
  participants: GroupParticipant[];
  /** The community this group is linked to. */
  communityId: string | null;
  /** True for the announcement group of a community. */
  isCommunityAnnounce: boolean;
}

export type ParticipantAction = 'add' | 'remove' | 'promote' | 'demote';

export type ParticipantOutcome =
  'ok' | 'already_participant' | 'not_participant' | 'not_on_network' | 'privacy_restricted' | 'not_allowed' | 'group_full' | 'no_request';

export interface ParticipantResult {
  number: string;
  jid: string;
  status: ParticipantOutcome;
}

export interface GroupInvitePreview {
  groupId: string;
  subject: string;
  description: string | null;
  owner: string | null;
  creation: number;
  size: number;
  joinApproval: boolean;
  isCommunity: boolean;
}

export interface JoinRequest {
  jid: string;
  number: string;
  requestedAt: number;
}

export interface GroupOperations {
  create(subject: string, participants: string[], description?: string): Promise<{ group: GroupInfo; results: ParticipantResult[] }>;
  info(groupId: string): Promise<GroupInfo>;
  /** Groups this account participates in (community announcement groups included). */
  list(page: PageRequest): Promise<PageOf<GroupInfo>>;
  updateParticipants(groupId: string, action: ParticipantAction, numbers: string[]): Promise<ParticipantResult[]>;
  picture(groupId: string): Promise<PictureView>;
  setPicture(groupId: string, image: ImageInput): Promise<PictureView>;
  removePicture(groupId: string): Promise<PictureView>;
  setSubject(groupId: string, subject: string): Promise<GroupInfo>;
  /** An empty description removes it. */
  setDescription(groupId: string, description: string): Promise<GroupInfo>;
  updateSettings(groupId: string, settings: Partial<GroupSettings>): Promise<GroupInfo>;
  inviteCode(groupId: string): Promise<string>;
  revokeInvite(groupId: string): Promise<string>;
  inviteInfo(code: string): Promise<GroupInvitePreview>;
  /** `requested` when the group needs an admin's approval. */
  join(code: string): Promise<{ groupId: string; status: 'joined' | 'requested' }>;
  leave(groupId: string): Promise<void>;
  joinRequests(groupId: string, page: PageRequest): Promise<PageOf<JoinRequest>>;
  handleJoinRequests(groupId: string, action: 'approve' | 'reject', numbers: string[]): Promise<ParticipantResult[]>;
}
