/**
 * Groups on the sandbox network, with the rules the real network applies: admins manage
 * participants, settings and invites; a locked group lets only admins edit its info; privacy can
 * keep a person from being added; join approval turns invite joins into requests. Every change
 * reaches the participants' instances as a GROUP event.
 */
import { errors } from '../../errors.js';
import {
  toJid,
  type CanonicalEvent,
  type GroupInfo,
  type GroupInvitePreview,
  type GroupOperations,
  type GroupSettings,
  type ImageInput,
  type JoinRequest,
  type PageOf,
  type PageRequest,
  type ParticipantAction,
  type ParticipantResult,
  type PictureView,
} from '../port.js';
import { pageOf } from '../paging.js';
import { newInviteCode, pictureUrl, storePicture, type GroupState, type SandboxWorld } from './world.js';

/** The network's limit on participants per group. */
export const MAX_GROUP_SIZE = 1024;

export function groupInfo(group: GroupState): GroupInfo {
  return {
    groupId: group.groupId,
    subject: group.subject,
    subjectOwner: group.subjectOwner ? toJid(group.subjectOwner) : null,
    subjectTimestamp: group.subjectTimestamp,
    description: group.description,
    owner: group.owner ? toJid(group.owner) : null,
    creation: group.creation,
    size: group.participants.length,
    participants: group.participants.map((p) => ({ jid: toJid(p.number), number: p.number, role: p.role })),
    announce: group.announce,
    locked: group.locked,
    joinApproval: group.joinApproval,
    ephemeral: group.ephemeral,
    memberAddMode: group.memberAddMode,
    communityId: group.communityId,
    isCommunityAnnounce: group.isCommunityAnnounce,
  };
}

export function isParticipant(group: GroupState, number: string): boolean {
  return group.participants.some((p) => p.number === number);
}

export function isAdmin(group: GroupState, number: string): boolean {
  return group.participants.some((p) => p.number === number && p.role !== 'member');
}

export function participantNumbers(group: GroupState): string[] {
  return group.participants.map((p) => p.number);
}

export function adminNumbers(group: GroupState): string[] {
  return group.participants.filter((p) => p.role !== 'member').map((p) => p.number);
}

export function groupEvent(groupId: string, action: string, author: string, extra: Record<string, unknown> = {}): CanonicalEvent {
  return { type: 'GROUP', data: { id: groupId, action, author: toJid(author), ...extra } };
}

export function newGroup(world: SandboxWorld, owner: string, subject: string, description: string | null): GroupState {
  const now = world.now();
  return {
    groupId: world.newGroupId(),
    subject,
    subjectOwner: owner,
    subjectTimestamp: now,
    description,
    owner,
    creation: now,
    participants: [{ number: owner, role: 'superadmin' }],
    announce: false,
    locked: false,
    joinApproval: false,
    ephemeral: 0,
    memberAddMode: 'admins',
    inviteCode: newInviteCode(),
    picture: null,
    requests: [],
    communityId: null,
    isCommunityAnnounce: false,
  };
}

/**
 * Keeps a community's announcement group holding exactly its members (community admins plus the
 * participants of its linked groups) and tells those who came or went.
 */
export async function syncCommunityMembers(world: SandboxWorld, communityId: string, author: string): Promise<void> {
  const community = world.communities.get(communityId);
  const announce = community ? world.groups.get(community.announceGroupId) : undefined;
  if (!community || !announce) return;
  const wanted = new Map<string, 'superadmin' | 'admin' | 'member'>();
  for (const groupId of community.groupIds) {
    for (const p of world.groups.get(groupId)?.participants ?? []) wanted.set(p.number, 'member');
  }
  for (const admin of community.admins) wanted.set(admin, admin === community.owner ? 'superadmin' : 'admin');
  const before = new Set(participantNumbers(announce));
  const added = [...wanted.keys()].filter((n) => !before.has(n));
  const removed = [...before].filter((n) => !wanted.has(n));
  announce.participants = [...wanted].map(([number, role]) => ({ number, role }));
  if (added.length === 0 && removed.length === 0) return;
  await world.saveGroup(announce);
  for (const number of added) world.chat(number, announce.groupId).conversationTimestamp ??= world.now();
  if (added.length > 0) {
    await world.emitToAll(participantNumbers(announce), groupEvent(announce.groupId, 'add', author, { participants: added.map(toJid) }));
  }
  if (removed.length > 0) {
    await world.emitToAll(
      [...participantNumbers(announce), ...removed],
      groupEvent(announce.groupId, 'remove', author, { participants: removed.map(toJid) }),
    );
  }
}

export class SandboxGroups implements GroupOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async create(subject: string, participants: string[], description?: string) {
    const owner = this.me();
    const group = newGroup(this.world, owner, subject, description ? description : null);
    const results: ParticipantResult[] = [];
    for (const number of unique(participants)) {
      if (number === owner) continue;
      const status = this.addable(group, number, owner);
      if (status === 'ok') group.participants.push({ number, role: 'member' });
      results.push({ number, jid: toJid(number), status });
    }
    this.world.groups.set(group.groupId, group);
    await this.world.saveGroup(group);
    for (const number of participantNumbers(group)) this.world.chat(number, group.groupId).conversationTimestamp = group.creation;
    await this.world.emitToAll(
      participantNumbers(group),
      groupEvent(group.groupId, 'create', owner, { subject, participants: participantNumbers(group).map(toJid) }),
    );
    return { group: groupInfo(group), results };
  }

  async info(groupId: string): Promise<GroupInfo> {
    return groupInfo(this.memberOf(groupId));
  }

  async list(page: PageRequest): Promise<PageOf<GroupInfo>> {
    const owner = this.me();
    const mine = [...this.world.groups.values()].filter((g) => isParticipant(g, owner)).sort((a, b) => b.creation - a.creation);
    const { items, total } = pageOf(mine, page);
    return { items: items.map(groupInfo), total };
  }

  async updateParticipants(groupId: string, action: ParticipantAction, numbers: string[]): Promise<ParticipantResult[]> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    if (group.isCommunityAnnounce) {
      throw errors.conflict('the members of a community announcement group follow its linked groups; change those groups instead');
    }
    if (action === 'add') {
      if (group.memberAddMode !== 'all') this.requireAdmin(group, actor, 'add participants');
    } else {
      this.requireAdmin(group, actor, `${action} participants`);
    }
    const results: ParticipantResult[] = [];
    const removed: string[] = [];
    for (const number of unique(numbers)) {
      const status = this.applyParticipant(group, action, number, actor);
      if (status === 'ok' && action === 'remove') removed.push(number);
      results.push({ number, jid: toJid(number), status });
    }
    const changed = results.filter((r) => r.status === 'ok');
    if (changed.length === 0) return results;
    await this.world.saveGroup(group);
    if (action === 'add') for (const r of changed) this.world.chat(r.number, group.groupId).conversationTimestamp ??= this.world.now();
    await this.world.emitToAll(
      [...participantNumbers(group), ...removed],
      groupEvent(group.groupId, action, actor, { participants: changed.map((r) => r.jid) }),
    );
    if (group.communityId && (action === 'add' || action === 'remove')) await syncCommunityMembers(this.world, group.communityId, actor);
    return results;
  }

  async picture(groupId: string): Promise<PictureView> {
    const group = this.memberOf(groupId);
    return { jid: group.groupId, pictureId: group.picture?.pictureId ?? null, url: pictureUrl(group.picture) };
  }

  async setPicture(groupId: string, image: ImageInput): Promise<PictureView> {
    const actor = this.me();
    const group = this.editableBy(groupId, actor, 'change the picture');
    group.picture = storePicture(image);
    await this.changed(group, actor, { pictureId: group.picture.pictureId });
    return { jid: group.groupId, pictureId: group.picture.pictureId, url: pictureUrl(group.picture) };
  }

  async removePicture(groupId: string): Promise<PictureView> {
    const actor = this.me();
    const group = this.editableBy(groupId, actor, 'remove the picture');
    if (!group.picture) throw errors.notFound('group picture');
    group.picture = null;
    await this.changed(group, actor, { pictureId: null });
    return { jid: group.groupId, pictureId: null, url: null };
  }

  async setSubject(groupId: string, subject: string): Promise<GroupInfo> {
    const actor = this.me();
    const group = this.editableBy(groupId, actor, 'change the subject');
    group.subject = subject;
    group.subjectOwner = actor;
    group.subjectTimestamp = this.world.now();
    await this.changed(group, actor, { subject });
    return groupInfo(group);
  }

  async setDescription(groupId: string, description: string): Promise<GroupInfo> {
    const actor = this.me();
    const group = this.editableBy(groupId, actor, 'change the description');
    group.description = description === '' ? null : description;
    await this.changed(group, actor, { description: group.description });
    return groupInfo(group);
  }

  async updateSettings(groupId: string, settings: Partial<GroupSettings>): Promise<GroupInfo> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    this.requireAdmin(group, actor, 'change group settings');
    const changes: Record<string, unknown> = {};
    for (const key of ['announce', 'locked', 'joinApproval', 'ephemeral', 'memberAddMode'] as const) {
      const value = settings[key];
      if (value === undefined || value === group[key]) continue;
      (group as unknown as Record<string, unknown>)[key] = value;
      changes[key] = value;
    }
    if (Object.keys(changes).length > 0) await this.changed(group, actor, changes);
    return groupInfo(group);
  }

  async inviteCode(groupId: string): Promise<string> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    this.requireAdmin(group, actor, 'see the invite link');
    this.refuseAnnounceInvite(group);
    return group.inviteCode;
  }

  async revokeInvite(groupId: string): Promise<string> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    this.requireAdmin(group, actor, 'revoke the invite link');
    this.refuseAnnounceInvite(group);
    group.inviteCode = newInviteCode();
    await this.world.saveGroup(group);
    // Only admins learn that the link changed; they are the ones who can see it.
    await this.world.emitToAll(adminNumbers(group), groupEvent(group.groupId, 'update', actor, { changes: { inviteLinkRevoked: true } }));
    return group.inviteCode;
  }

  async inviteInfo(code: string): Promise<GroupInvitePreview> {
    const group = this.byInvite(code);
    return {
      groupId: group.groupId,
      subject: group.subject,
      description: group.description,
      owner: group.owner ? toJid(group.owner) : null,
      creation: group.creation,
      size: group.participants.length,
      joinApproval: group.joinApproval,
      isCommunity: false,
    };
  }

  async join(code: string): Promise<{ groupId: string; status: 'joined' | 'requested' }> {
    const joiner = this.me();
    const group = this.byInvite(code);
    return joinByInvite(this.world, group, joiner);
  }

  async leave(groupId: string): Promise<void> {
    const leaver = this.me();
    const group = this.memberOf(groupId);
    if (group.isCommunityAnnounce) {
      throw errors.conflict('a community announcement group cannot be left on its own; leave the community groups instead');
    }
    await leaveGroup(this.world, group, leaver);
  }

  async joinRequests(groupId: string, page: PageRequest): Promise<PageOf<JoinRequest>> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    this.requireAdmin(group, actor, 'see join requests');
    const { items, total } = pageOf(group.requests, page);
    return { items: items.map((r) => ({ jid: toJid(r.number), number: r.number, requestedAt: r.requestedAt })), total };
  }

  async handleJoinRequests(groupId: string, action: 'approve' | 'reject', numbers: string[]): Promise<ParticipantResult[]> {
    const actor = this.me();
    const group = this.memberOf(groupId);
    this.requireAdmin(group, actor, `${action} join requests`);
    const results: ParticipantResult[] = [];
    for (const number of unique(numbers)) {
      const index = group.requests.findIndex((r) => r.number === number);
      let status: ParticipantResult['status'] = 'ok';
      if (index < 0) status = 'no_request';
      else if (action === 'approve' && group.participants.length >= MAX_GROUP_SIZE) status = 'group_full';
      if (status === 'ok') {
        group.requests.splice(index, 1);
        if (action === 'approve') group.participants.push({ number, role: 'member' });
      }
      results.push({ number, jid: toJid(number), status });
    }
    const done = results.filter((r) => r.status === 'ok');
    if (done.length === 0) return results;
    await this.world.saveGroup(group);
    if (action === 'approve') {
      for (const r of done) this.world.chat(r.number, group.groupId).conversationTimestamp ??= this.world.now();
      await this.world.emitToAll(
        participantNumbers(group),
        groupEvent(group.groupId, 'add', actor, { participants: done.map((r) => r.jid) }),
      );
      if (group.communityId) await syncCommunityMembers(this.world, group.communityId, actor);
    } else {
      await this.world.emitToAll(
        [...adminNumbers(group), ...done.map((r) => r.number)],
        groupEvent(group.groupId, 'join_request_rejected', actor, { participants: done.map((r) => r.jid) }),
      );
    }
    return results;
  }

  // --- rules ---

  /** The group, when this account participates in it: 404 unknown, 403 not a participant. */
  /**
   * The other participants a message to the group reaches, as the network checks it: 404 unknown
   * group, 403 not a participant, 403 an announcement group where the sender is not an admin.
   */
  messageRecipients(groupId: string): string[] {
    const sender = this.me();
    const group = this.memberOf(groupId);
    if (group.announce) this.requireAdmin(group, sender, 'send messages to this group (only admins can send)');
    return participantNumbers(group).filter((number) => number !== sender);
  }

  private memberOf(groupId: string): GroupState {
    const owner = this.me();
    const group = this.world.groups.get(groupId);
    if (!group) throw errors.notFound(`group ${groupId}`);
    if (!isParticipant(group, owner)) throw errors.forbidden(`you are not a participant of group ${groupId}`);
    return group;
  }

  private requireAdmin(group: GroupState, actor: string, what: string): void {
    if (!isAdmin(group, actor)) throw errors.forbidden(`only group admins can ${what}`);
  }

  /** Subject, description and picture: anyone, unless the group is locked to admins. */
  private editableBy(groupId: string, actor: string, what: string): GroupState {
    const group = this.memberOf(groupId);
    if (group.locked && !isAdmin(group, actor)) throw errors.forbidden(`only group admins can ${what} of this group (it is locked)`);
    return group;
  }

  private refuseAnnounceInvite(group: GroupState): void {
    if (group.isCommunityAnnounce)
      throw errors.conflict('a community announcement group has no invite link; invite people to the community groups');
  }

  private byInvite(code: string): GroupState {
    for (const group of this.world.groups.values()) if (group.inviteCode === code && !group.isCommunityAnnounce) return group;
    throw errors.notFoundText('invite code is invalid or was revoked');
  }

  private addable(group: GroupState, number: string, actor: string): ParticipantResult['status'] {
    if (isParticipant(group, number)) return 'already_participant';
    if (!this.world.isOnNetwork(number)) return 'not_on_network';
    if (!mayAddToGroup(this.world, number, actor)) return 'privacy_restricted';
    if (group.participants.length >= MAX_GROUP_SIZE) return 'group_full';
    return 'ok';
  }

  private applyParticipant(group: GroupState, action: ParticipantAction, number: string, actor: string): ParticipantResult['status'] {
    if (action === 'add') {
      const status = this.addable(group, number, actor);
      if (status === 'ok') {
        group.participants.push({ number, role: 'member' });
        group.requests = group.requests.filter((r) => r.number !== number);
      }
      return status;
    }
    const participant = group.participants.find((p) => p.number === number);
    if (!participant) return 'not_participant';
    switch (action) {
      case 'remove':
        // Nobody removes the group creator, and leaving is done with leave.
        if (participant.role === 'superadmin' || number === actor) return 'not_allowed';
        group.participants = group.participants.filter((p) => p.number !== number);
        return 'ok';
      case 'promote':
        if (participant.role === 'member') participant.role = 'admin';
        return 'ok';
      case 'demote':
        if (participant.role === 'superadmin') return 'not_allowed';
        participant.role = 'member';
        return 'ok';
    }
  }

  private async changed(group: GroupState, actor: string, changes: Record<string, unknown>): Promise<void> {
    await this.world.saveGroup(group);
    await this.world.emitToAll(participantNumbers(group), groupEvent(group.groupId, 'update', actor, { changes }));
  }
}

/** The person's `groupAdd` privacy decides who may add them (blocked people never may). */
export function mayAddToGroup(world: SandboxWorld, number: string, actor: string): boolean {
  if (world.hasBlocked(number, actor)) return false;
  const audience = world.findAccount(number)?.privacy.groupAdd ?? 'all';
  return world.allows(number, actor, audience);
}

/** Joins through an invite: at once, or as a request when the group wants approval. */
export async function joinByInvite(
  world: SandboxWorld,
  group: GroupState,
  joiner: string,
): Promise<{ groupId: string; status: 'joined' | 'requested' }> {
  if (isParticipant(group, joiner)) throw errors.conflict(`already a participant of group ${group.groupId}`);
  if (group.participants.length >= MAX_GROUP_SIZE) throw errors.conflict(`group ${group.groupId} is full (${MAX_GROUP_SIZE} participants)`);
  if (group.joinApproval) {
    if (!group.requests.some((r) => r.number === joiner)) {
      group.requests.push({ number: joiner, requestedAt: world.now() });
      await world.saveGroup(group);
      await world.emitToAll(
        [...adminNumbers(group), joiner],
        groupEvent(group.groupId, 'join_request', joiner, { participants: [toJid(joiner)] }),
      );
    }
    return { groupId: group.groupId, status: 'requested' };
  }
  group.participants.push({ number: joiner, role: 'member' });
  await world.saveGroup(group);
  world.chat(joiner, group.groupId).conversationTimestamp ??= world.now();
  await world.emitToAll(participantNumbers(group), groupEvent(group.groupId, 'join', joiner, { participants: [toJid(joiner)] }));
  if (group.communityId) await syncCommunityMembers(world, group.communityId, joiner);
  return { groupId: group.groupId, status: 'joined' };
}

/** Leaves a group; when the last admin leaves, the longest-standing participant becomes admin. */
export async function leaveGroup(world: SandboxWorld, group: GroupState, leaver: string): Promise<void> {
  group.participants = group.participants.filter((p) => p.number !== leaver);
  const heir = group.participants[0];
  const promoted = heir && !group.participants.some((p) => p.role !== 'member') ? heir : undefined;
  if (promoted) promoted.role = 'admin';
  await world.saveGroup(group);
  await world.emitToAll(
    [...participantNumbers(group), leaver],
    groupEvent(group.groupId, 'leave', leaver, { participants: [toJid(leaver)] }),
  );
  if (promoted) {
    await world.emitToAll(
      participantNumbers(group),
      groupEvent(group.groupId, 'promote', leaver, { participants: [toJid(promoted.number)] }),
    );
  }
  if (group.communityId) await syncCommunityMembers(world, group.communityId, leaver);
}

function unique(numbers: string[]): string[] {
  return [...new Set(numbers)];
}
