/**
 * Communities on WhatsApp: the port's CommunityOperations over Baileys 7. A community is a parent
 * group (`<parent>` in its metadata); its groups, the announcement group among them (marked
 * `<default_sub_group>`), come from a `<sub_groups>` query to the parent. Linking and unlinking are
 * `<links>` / `<unlink>` queries to the parent; announcements are plain sends to the announcement
 * group. Events come from WhatsApp's `w:gp2` notifications through translate-in.ts.
 */
import { getBinaryNodeChild, getBinaryNodeChildren, type BinaryNode, type GroupMetadata } from 'baileys';
import { errors } from '../../errors.js';
import type { CommunityInfo, CommunityOperations, GroupInfo, PageOf, PageRequest, SentMessage } from '../port.js';
import { groupInfoOf, type WhatsAppGroups } from './groups.js';
import { isOwn, personOf, type OperationsContext } from './operations.js';
import { pageOf } from '../paging.js';
import { attempt, refusal } from './refusals.js';

/** One group of a community as the `<sub_groups>` reply lists it. */
export interface SubGroup {
  groupId: string;
  subject: string;
  creation: number;
  owner: string | null;
  size: number | null;
  isAnnounce: boolean;
}

function subGroupOf(node: BinaryNode): SubGroup | undefined {
  const raw = node.attrs.id ?? node.attrs.jid;
  if (!raw) return undefined;
  return {
    groupId: raw.includes('@') ? raw : `${raw}@g.us`,
    subject: node.attrs.subject ?? '',
    creation: Number(node.attrs.creation ?? 0),
    owner: node.attrs.creator ?? null,
    size: node.attrs.size ? Number(node.attrs.size) : null,
    isAnnounce: Boolean(getBinaryNodeChild(node, 'default_sub_group')),
  };
}

export class WhatsAppCommunities implements CommunityOperations {
  constructor(
    private readonly ctx: OperationsContext,
    private readonly groupOps: WhatsAppGroups,
  ) {}

  /**
   * Baileys' communityCreate sends `<create subject><description/><parent/>…</create>` and then
   * reads the new community's metadata (a failure of that read comes back as null).
   */
  async create(subject: string, description?: string): Promise<CommunityInfo> {
    const socket = this.ctx.socket();
    const meta = await attempt(() => socket.communityCreate(subject, description ?? ''), {
      notFound: 'community',
      refused: 'WhatsApp refused to create the community',
    });
    if (!meta)
      throw errors.networkError('WhatsApp created the community but its details could not be read; list the communities to find it');
    this.ctx.groupCache.set(meta.id, meta);
    return this.info(meta.id);
  }

  async info(communityId: string): Promise<CommunityInfo> {
    const meta = await this.parent(communityId);
    const subGroups = await this.subGroups(communityId);
    const announce = subGroups.find((g) => g.isAnnounce);
    if (!announce) throw errors.networkError(`WhatsApp did not name the announcement group of community ${communityId}`);
    const info = groupInfoOf(meta, this.ctx);
    const me = meta.participants.find((p) => isOwn(this.ctx, p.id) || isOwn(this.ctx, p.phoneNumber) || isOwn(this.ctx, p.lid));
    return {
      communityId,
      subject: info.subject,
      description: info.description,
      owner: info.owner,
      creation: info.creation,
      announceGroupId: announce.groupId,
      groups: subGroups.filter((g) => !g.isAnnounce).map((g) => ({ groupId: g.groupId, subject: g.subject })),
      // Every member is in the announcement group; the parent itself holds only the admins.
      size: announce.size ?? info.size,
      role: me?.admin ? 'admin' : 'member',
    };
  }

  /** Communities are the parent groups among the groups this account participates in. */
  async list(page: PageRequest): Promise<PageOf<CommunityInfo>> {
    const socket = this.ctx.socket();
    const all = await attempt(() => socket.groupFetchAllParticipating(), {
      notFound: 'communities',
      refused: 'WhatsApp refused to list the communities',
    });
    const parents = Object.values(all)
      .filter((meta) => meta.isCommunity)
      .sort((a, b) => (b.creation ?? 0) - (a.creation ?? 0));
    for (const meta of parents) this.ctx.groupCache.set(meta.id, meta);
    const { items, total } = pageOf(parents, page);
    const infos: CommunityInfo[] = [];
    for (const meta of items) infos.push(await this.info(meta.id));
    return { items: infos, total };
  }

  async link(communityId: string, groupIds: string[]): Promise<CommunityInfo> {
    const socket = this.ctx.socket();
    for (const groupId of new Set(groupIds)) {
      await attempt(() => socket.communityLinkGroup(groupId, communityId), {
        notFound: `group ${groupId} or community ${communityId}`,
        refused: `not allowed to link group ${groupId}: only admins of both the community and the group can`,
      });
      this.ctx.groupCache.del(groupId);
    }
    return this.info(communityId);
  }

  async unlink(communityId: string, groupIds: string[]): Promise<CommunityInfo> {
    const socket = this.ctx.socket();
    for (const groupId of new Set(groupIds)) {
      await attempt(() => socket.communityUnlinkGroup(groupId, communityId), {
        notFound: `group ${groupId} in community ${communityId}`,
        refused: `not allowed to unlink group ${groupId}: only community admins can`,
      });
      this.ctx.groupCache.del(groupId);
    }
    return this.info(communityId);
  }

  /**
   * The announcement group first, then the linked groups. Groups this account has not joined are
   * shown as the `<sub_groups>` reply describes them: no participants, and WhatsApp's defaults for
   * settings that only their members can see.
   */
  async groups(communityId: string, page: PageRequest): Promise<PageOf<GroupInfo>> {
    await this.parent(communityId);
    const subGroups = await this.subGroups(communityId);
    const ordered = [...subGroups.filter((g) => g.isAnnounce), ...subGroups.filter((g) => !g.isAnnounce)];
    const { items, total } = pageOf(ordered, page);
    const infos: GroupInfo[] = [];
    for (const group of items) infos.push(await this.groupInfo(communityId, group));
    return { items: infos, total };
  }

  /** Only community admins write in the announcement group; WhatsApp would drop anyone else's post. */
  async announce(communityId: string, text: string): Promise<SentMessage> {
    const info = await this.info(communityId);
    if (info.role !== 'admin') throw errors.forbidden(`only community admins can post announcements in community ${communityId}`);
    return this.ctx.send({ kind: 'text', to: info.announceGroupId, text, linkPreview: false });
  }

  // --- helpers ---

  private async parent(communityId: string): Promise<GroupMetadata> {
    const meta = await this.groupOps.metadata(communityId);
    if (!meta.isCommunity) throw errors.notFoundText(`community ${communityId} not found (${communityId} is a group, not a community)`);
    return meta;
  }

  private async subGroups(communityId: string): Promise<SubGroup[]> {
    const socket = this.ctx.socket();
    const reply = await attempt(
      () =>
        socket.query({ tag: 'iq', attrs: { type: 'get', xmlns: 'w:g2', to: communityId }, content: [{ tag: 'sub_groups', attrs: {} }] }),
      { notFound: `community ${communityId}`, refused: `not allowed to see the groups of community ${communityId}` },
    );
    return getBinaryNodeChildren(getBinaryNodeChild(reply, 'sub_groups'), 'group').flatMap((node) => subGroupOf(node) ?? []);
  }

  private async groupInfo(communityId: string, group: SubGroup): Promise<GroupInfo> {
    try {
      return await this.groupOps.info(group.groupId);
    } catch (error) {
      const mapped = refusal(error, { notFound: `group ${group.groupId}`, refused: '' });
      if (mapped.status !== 403 && mapped.status !== 404) throw mapped;
    }
    return {
      groupId: group.groupId,
      subject: group.subject,
      subjectOwner: null,
      subjectTimestamp: null,
      description: null,
      owner: group.owner ? personOf(this.ctx.addresses, group.owner).jid : null,
      creation: group.creation,
      size: group.size ?? 0,
      participants: [],
      announce: group.isAnnounce,
      locked: group.isAnnounce,
      joinApproval: false,
      ephemeral: 0,
      memberAddMode: 'admins',
      communityId,
      isCommunityAnnounce: group.isAnnounce,
    };
  }
}
