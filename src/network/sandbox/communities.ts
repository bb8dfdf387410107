/**
 * Communities on the sandbox network: a community has admins, linked groups and an announcement
 * group that holds every member (admins plus the linked groups' participants) where only admins
 * write. Linking needs admin rights in both the community and the group.
 */
import { errors } from '../../errors.js';
import {
  toJid,
  type CommunityInfo,
  type CommunityOperations,
  type GroupInfo,
  type PageOf,
  type PageRequest,
  type SentMessage,
} from '../port.js';
import { groupEvent, groupInfo, isAdmin, isParticipant, newGroup, participantNumbers, syncCommunityMembers } from './groups.js';
import { newMessageId } from './network.js';
import { type CommunityState, type SandboxWorld } from './world.js';
import { pageOf } from '../paging.js';

export class SandboxCommunities implements CommunityOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async create(subject: string, description?: string): Promise<CommunityInfo> {
    const owner = this.me();
    const communityId = this.world.newGroupId();
    const announce = newGroup(this.world, owner, subject, null);
    Object.assign(announce, { announce: true, locked: true, communityId, isCommunityAnnounce: true });
    const community: CommunityState = {
      communityId,
      subject,
      description: description ? description : null,
      owner,
      creation: announce.creation,
      admins: [owner],
      announceGroupId: announce.groupId,
      groupIds: [],
    };
    this.world.groups.set(announce.groupId, announce);
    this.world.communities.set(communityId, community);
    await this.world.saveGroup(announce);
    await this.world.saveCommunity(community);
    this.world.chat(owner, announce.groupId).conversationTimestamp = announce.creation;
    await this.world.emitTo(
      owner,
      groupEvent(communityId, 'create', owner, {
        subject,
        isCommunity: true,
        announceGroupId: announce.groupId,
        participants: [toJid(owner)],
      }),
    );
    return this.view(community, owner);
  }

  async info(communityId: string): Promise<CommunityInfo> {
    const member = this.me();
    return this.view(this.memberOf(communityId), member);
  }

  async list(page: PageRequest): Promise<PageOf<CommunityInfo>> {
    const member = this.me();
    const mine = [...this.world.communities.values()].filter((c) => this.isMember(c, member)).sort((a, b) => b.creation - a.creation);
    const { items, total } = pageOf(mine, page);
    return { items: items.map((c) => this.view(c, member)), total };
  }

  async link(communityId: string, groupIds: string[]): Promise<CommunityInfo> {
    const actor = this.me();
    const community = this.adminOf(communityId, 'link groups');
    const groups = [...new Set(groupIds)].map((groupId) => {
      const group = this.world.groups.get(groupId);
      if (!group) throw errors.notFound(`group ${groupId}`);
      if (group.isCommunityAnnounce) throw errors.conflict(`group ${groupId} is a community announcement group`);
      if (!isAdmin(group, actor)) throw errors.forbidden(`you must be an admin of group ${groupId} to link it`);
      if (group.communityId !== null && group.communityId !== communityId) {
        throw errors.conflict(`group ${groupId} already belongs to community ${group.communityId}; unlink it there first`);
      }
      return group;
    });
    const linked = groups.filter((g) => g.communityId === null);
    for (const group of linked) {
      group.communityId = communityId;
      community.groupIds.push(group.groupId);
      await this.world.saveGroup(group);
    }
    if (linked.length > 0) {
      await this.world.saveCommunity(community);
      await syncCommunityMembers(this.world, communityId, actor);
      await this.world.emitToAll(this.members(community), groupEvent(communityId, 'link', actor, { groups: linked.map((g) => g.groupId) }));
    }
    return this.view(community, actor);
  }

  async unlink(communityId: string, groupIds: string[]): Promise<CommunityInfo> {
    const actor = this.me();
    const community = this.adminOf(communityId, 'unlink groups');
    const unique = [...new Set(groupIds)];
    for (const groupId of unique) {
      if (!community.groupIds.includes(groupId)) throw errors.conflict(`group ${groupId} is not linked to community ${communityId}`);
    }
    const before = this.members(community);
    for (const groupId of unique) {
      const group = this.world.groups.get(groupId);
      community.groupIds = community.groupIds.filter((id) => id !== groupId);
      if (group) {
        group.communityId = null;
        await this.world.saveGroup(group);
      }
    }
    await this.world.saveCommunity(community);
    await syncCommunityMembers(this.world, communityId, actor);
    await this.world.emitToAll(before, groupEvent(communityId, 'unlink', actor, { groups: unique }));
    return this.view(community, actor);
  }

  async groups(communityId: string, page: PageRequest): Promise<PageOf<GroupInfo>> {
    const community = this.memberOf(communityId);
    const all = [community.announceGroupId, ...community.groupIds].flatMap((id) => {
      const group = this.world.groups.get(id);
      return group ? [groupInfo(group)] : [];
    });
    return pageOf(all, page);
  }

  async announce(communityId: string, text: string): Promise<SentMessage> {
    const author = this.me();
    const community = this.adminOf(communityId, 'post announcements');
    const id = newMessageId();
    const messageTimestamp = this.world.now();
    const message = { conversation: text };
    const key = { remoteJid: community.announceGroupId, fromMe: true, id };
    await this.world.emitTo(author, { type: 'SEND_MESSAGE', data: { key, message, messageTimestamp, status: 'SENT' } });
    const incoming = {
      key: { remoteJid: community.announceGroupId, fromMe: false, id },
      participant: toJid(author),
      pushName: this.world.displayName(author),
      message,
      messageTimestamp,
    };
    await this.world.emitToAll(
      this.members(community).filter((n) => n !== author),
      { type: 'MESSAGE', data: incoming },
    );
    return { key, message, messageTimestamp, status: 'SENT' };
  }

  private members(community: CommunityState): string[] {
    const announce = this.world.groups.get(community.announceGroupId);
    return announce ? participantNumbers(announce) : [...community.admins];
  }

  private isMember(community: CommunityState, number: string): boolean {
    if (community.admins.includes(number)) return true;
    const announce = this.world.groups.get(community.announceGroupId);
    return announce ? isParticipant(announce, number) : false;
  }

  private memberOf(communityId: string): CommunityState {
    const member = this.me();
    const community = this.world.communities.get(communityId);
    if (!community) throw errors.notFound(`community ${communityId}`);
    if (!this.isMember(community, member)) throw errors.forbidden(`you are not a member of community ${communityId}`);
    return community;
  }

  private adminOf(communityId: string, what: string): CommunityState {
    const community = this.memberOf(communityId);
    if (!community.admins.includes(this.me())) throw errors.forbidden(`only community admins can ${what}`);
    return community;
  }

  private view(community: CommunityState, viewer: string): CommunityInfo {
    return {
      communityId: community.communityId,
      subject: community.subject,
      description: community.description,
      owner: community.owner ? toJid(community.owner) : null,
      creation: community.creation,
      announceGroupId: community.announceGroupId,
      groups: community.groupIds.map((groupId) => ({ groupId, subject: this.world.groups.get(groupId)?.subject ?? '' })),
      size: this.members(community).length,
      role: community.admins.includes(viewer) ? 'admin' : 'member',
    };
  }
}
