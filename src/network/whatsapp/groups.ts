/**
 * Groups on WhatsApp: the port's GroupOperations translated to Baileys 7's group queries
 * (`<iq xmlns="w:g2">`) and profile-picture queries (`<iq xmlns="w:profile:picture">`). Reads go
 * through the session's group metadata cache (the one Baileys uses to send to groups); every change
 * drops the cached entry and answers with fresh metadata. No event is emitted here: WhatsApp tells
 * every participant's devices (this one included) with a `w:gp2` notification, which reaches the
 * event road through translate-in.ts like any other group change.
 */
import {
  S_WHATSAPP_NET,
  generateMessageIDV2,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  type BinaryNode,
  type GroupMetadata,
  type WASocket,
} from 'baileys';
import { errors } from '../../errors.js';
import {
  type GroupInfo,
  type GroupInvitePreview,
  type GroupOperations,
  type GroupParticipant,
  type GroupSettings,
  type ImageInput,
  type JoinRequest,
  type PageOf,
  type PageRequest,
  type ParticipantAction,
  type ParticipantOutcome,
  type ParticipantResult,
  type PictureView,
} from '../port.js';
import { personOf, phoneJids, type OperationsContext } from './operations.js';
import { pageOf } from '../paging.js';
import { attempt, refusal } from './refusals.js';

/** Disappearing-message timers WhatsApp offers (seconds); 0 is off. */
export const EPHEMERAL_TIMERS = [0, 86_400, 604_800, 7_776_000];

function finite(value: number | undefined): number | null {
  return value !== undefined && Number.isFinite(value) ? value : null;
}

/** Baileys' group metadata as the port's GroupInfo. */
export function groupInfoOf(meta: GroupMetadata, ctx: OperationsContext): GroupInfo {
  const participants: GroupParticipant[] = meta.participants.map((p) => ({
    ...personOf(ctx.addresses, p.id, p.phoneNumber ?? p.lid),
    role: p.admin === 'superadmin' ? 'superadmin' : p.admin === 'admin' ? 'admin' : 'member',
  }));
  return {
    groupId: meta.id,
    subject: meta.subject ?? '',
    subjectOwner: meta.subjectOwner ? personOf(ctx.addresses, meta.subjectOwner, meta.subjectOwnerPn).jid : null,
    subjectTimestamp: finite(meta.subjectTime),
    description: meta.desc ?? null,
    owner: meta.owner ? personOf(ctx.addresses, meta.owner, meta.ownerPn).jid : null,
    creation: finite(meta.creation) ?? 0,
    size: meta.size ?? participants.length,
    participants,
    announce: Boolean(meta.announce),
    locked: Boolean(meta.restrict),
    joinApproval: Boolean(meta.joinApprovalMode),
    ephemeral: meta.ephemeralDuration ?? 0,
    memberAddMode: meta.memberAddMode ? 'all' : 'admins',
    communityId: meta.linkedParent ?? null,
    isCommunityAnnounce: Boolean(meta.isCommunityAnnounce),
  };
}

/**
 * What one participant's `error` code in a `w:g2` reply means for the action (200 or none: done).
 * 403 on add: the person's privacy needs an invite; 404: no such account (add) or not in the
 * group; 409: already in the group; 408: recently removed, cannot be re-added yet; 419/500: full.
 */
export function participantOutcome(code: string | undefined, action: ParticipantAction | 'approve' | 'reject'): ParticipantOutcome {
  switch (code) {
    case undefined:
    case '':
    case '200':
      return 'ok';
    case '403':
      return action === 'add' ? 'privacy_restricted' : 'not_allowed';
    case '404':
      if (action === 'add') return 'not_on_network';
      return action === 'approve' || action === 'reject' ? 'no_request' : 'not_participant';
    case '409':
      return action === 'add' || action === 'approve' ? 'already_participant' : 'not_allowed';
    case '419':
    case '500':
      return 'group_full';
    default:
      return 'not_allowed';
  }
}

/** Per requested number, the outcome the reply's `<participant jid error>` nodes report. */
function outcomes(
  numbers: string[],
  reply: { jid?: string; status?: string; node?: BinaryNode }[],
  action: ParticipantAction | 'approve' | 'reject',
  ctx: OperationsContext,
): ParticipantResult[] {
  return phoneJids(numbers).map((jid) => {
    const number = jid.slice(0, jid.indexOf('@'));
    // In LID-addressed groups WhatsApp answers with the LID and the phone number beside it.
    const entry = reply.find(
      (r) => r.jid === jid || r.node?.attrs.phone_number === jid || (r.jid && ctx.addresses.resolve(r.jid).jid === jid),
    );
    return { number, jid, status: entry ? participantOutcome(entry.status, action) : 'not_allowed' };
  });
}

function groupQuery(socket: WASocket, to: string, type: 'get' | 'set', content: BinaryNode[]): Promise<BinaryNode> {
  return socket.query({ tag: 'iq', attrs: { type, xmlns: 'w:g2', to }, content });
}

export class WhatsAppGroups implements GroupOperations {
  constructor(private readonly ctx: OperationsContext) {}

  /**
   * Sent as Baileys' groupCreate sends it, but read here: WhatsApp marks the people it could not add
   * with an `error` code on their `<participant>` node, which Baileys' metadata parser drops.
   */
  async create(subject: string, participants: string[], description?: string): Promise<{ group: GroupInfo; results: ParticipantResult[] }> {
    const socket = this.ctx.socket();
    const jids = phoneJids(participants);
    const reply = await attempt(
      () =>
        groupQuery(socket, '@g.us', 'set', [
          {
            tag: 'create',
            attrs: { subject, key: generateMessageIDV2() },
            content: jids.map((jid) => ({ tag: 'participant', attrs: { jid } })),
          },
        ]),
      { notFound: 'participant', refused: 'WhatsApp refused to create the group' },
    );
    const groupNode = getBinaryNodeChild(reply, 'group');
    const rawId = groupNode?.attrs.id;
    if (!rawId) throw refusal(new Error('WhatsApp did not return the new group'), { notFound: 'group', refused: '' });
    const groupId = rawId.includes('@') ? rawId : `${rawId}@g.us`;
    const nodes = getBinaryNodeChildren(groupNode, 'participant').map((node) => ({ jid: node.attrs.jid, status: node.attrs.error, node }));
    const results = outcomes(participants, nodes, 'add', this.ctx);
    if (description) await attempt(() => socket.groupUpdateDescription(groupId, description), this.text(groupId, 'change the description'));
    return { group: await this.fresh(groupId), results };
  }

  async info(groupId: string): Promise<GroupInfo> {
    return groupInfoOf(await this.metadata(groupId), this.ctx);
  }

  /**
   * Baileys reports the fetched groups as `groups.update`, so a list refreshes the metadata cache
   * and is followed by GROUP `update` events, one per group (the same as after a phone-side change).
   */
  async list(page: PageRequest): Promise<PageOf<GroupInfo>> {
    const socket = this.ctx.socket();
    const all = await attempt(() => socket.groupFetchAllParticipating(), {
      notFound: 'groups',
      refused: 'WhatsApp refused to list the groups',
    });
    const groups = Object.values(all).filter((meta) => !meta.isCommunity);
    await this.learn(groups);
    for (const meta of groups) this.ctx.groupCache.set(meta.id, meta);
    groups.sort((a, b) => (b.creation ?? 0) - (a.creation ?? 0));
    const { items, total } = pageOf(groups, page);
    return { items: items.map((meta) => groupInfoOf(meta, this.ctx)), total };
  }

  async updateParticipants(groupId: string, action: ParticipantAction, numbers: string[]): Promise<ParticipantResult[]> {
    const socket = this.ctx.socket();
    const reply = await attempt(
      () => socket.groupParticipantsUpdate(groupId, phoneJids(numbers), action),
      this.text(groupId, `${action} participants`),
    );
    this.ctx.groupCache.del(groupId);
    return outcomes(
      numbers,
      reply.map((r) => ({ jid: r.jid, status: r.status, node: r.content })),
      action,
      this.ctx,
    );
  }

  /** A group without a picture answers 404: that is an empty picture, not an error. */
  async picture(groupId: string): Promise<PictureView> {
    const socket = this.ctx.socket();
    try {
      const reply = await socket.query({
        tag: 'iq',
        attrs: { target: groupId, to: S_WHATSAPP_NET, type: 'get', xmlns: 'w:profile:picture' },
        content: [{ tag: 'picture', attrs: { type: 'image', query: 'url' } }],
      });
      const picture = getBinaryNodeChild(reply, 'picture');
      return { jid: groupId, pictureId: picture?.attrs.id ?? null, url: picture?.attrs.url ?? null };
    } catch (error) {
      const mapped = refusal(error, this.text(groupId, 'see the picture'));
      if (mapped.status === 404) return { jid: groupId, pictureId: null, url: null };
      throw mapped;
    }
  }

  async setPicture(groupId: string, image: ImageInput): Promise<PictureView> {
    const socket = this.ctx.socket();
    await attempt(() => socket.updateProfilePicture(groupId, image.data), this.text(groupId, 'change the picture'));
    return this.picture(groupId);
  }

  async removePicture(groupId: string): Promise<PictureView> {
    const socket = this.ctx.socket();
    await attempt(() => socket.removeProfilePicture(groupId), {
      notFound: 'group picture',
      refused: `only group admins can remove the picture of ${groupId}`,
    });
    return { jid: groupId, pictureId: null, url: null };
  }

  async setSubject(groupId: string, subject: string): Promise<GroupInfo> {
    const socket = this.ctx.socket();
    await attempt(() => socket.groupUpdateSubject(groupId, subject), this.text(groupId, 'change the subject'));
    return this.fresh(groupId);
  }

  async setDescription(groupId: string, description: string): Promise<GroupInfo> {
    const socket = this.ctx.socket();
    // Baileys reads the current description id first (WhatsApp wants it as `prev`), then sets or deletes.
    await attempt(
      () => socket.groupUpdateDescription(groupId, description === '' ? undefined : description),
      this.text(groupId, 'change the description'),
    );
    return this.fresh(groupId);
  }

  /** One query per changed setting (WhatsApp has one per setting); unchanged ones are not sent. */
  async updateSettings(groupId: string, settings: Partial<GroupSettings>): Promise<GroupInfo> {
    if (settings.ephemeral !== undefined && !EPHEMERAL_TIMERS.includes(settings.ephemeral)) {
      throw errors.badRequest(`WhatsApp offers disappearing messages after ${EPHEMERAL_TIMERS.slice(1).join(', ')} seconds, or 0 (off)`);
    }
    const socket = this.ctx.socket();
    const current = await this.info(groupId);
    const text = this.text(groupId, 'change group settings');
    const { announce, locked, joinApproval, ephemeral, memberAddMode } = settings;
    const changes: (() => Promise<void>)[] = [];
    if (announce !== undefined && announce !== current.announce)
      changes.push(() => socket.groupSettingUpdate(groupId, announce ? 'announcement' : 'not_announcement'));
    if (locked !== undefined && locked !== current.locked)
      changes.push(() => socket.groupSettingUpdate(groupId, locked ? 'locked' : 'unlocked'));
    if (joinApproval !== undefined && joinApproval !== current.joinApproval)
      changes.push(() => socket.groupJoinApprovalMode(groupId, joinApproval ? 'on' : 'off'));
    if (ephemeral !== undefined && ephemeral !== current.ephemeral) changes.push(() => socket.groupToggleEphemeral(groupId, ephemeral));
    if (memberAddMode !== undefined && memberAddMode !== current.memberAddMode) {
      changes.push(() => socket.groupMemberAddMode(groupId, memberAddMode === 'all' ? 'all_member_add' : 'admin_add'));
    }
    if (changes.length === 0) return current;
    for (const change of changes) await attempt(change, text);
    return this.fresh(groupId);
  }

  async inviteCode(groupId: string): Promise<string> {
    const socket = this.ctx.socket();
    return this.code(await attempt(() => socket.groupInviteCode(groupId), this.text(groupId, 'see the invite link')));
  }

  async revokeInvite(groupId: string): Promise<string> {
    const socket = this.ctx.socket();
    return this.code(await attempt(() => socket.groupRevokeInvite(groupId), this.text(groupId, 'revoke the invite link')));
  }

  async inviteInfo(code: string): Promise<GroupInvitePreview> {
    const socket = this.ctx.socket();
    const meta = await attempt(() => socket.groupGetInviteInfo(code), {
      notFound: 'invite code',
      refused: 'WhatsApp refused to show this invite',
    });
    const info = groupInfoOf(meta, this.ctx);
    return {
      groupId: info.groupId,
      subject: info.subject,
      description: info.description,
      owner: info.owner,
      creation: info.creation,
      size: info.size,
      joinApproval: info.joinApproval,
      isCommunity: Boolean(meta.isCommunity),
    };
  }

  /**
   * Sent as Baileys' groupAcceptInvite sends it, but read here: a group that wants approval answers
   * `<membership_approval_request jid>` instead of `<group jid>` (Baileys returns nothing for it).
   */
  async join(code: string): Promise<{ groupId: string; status: 'joined' | 'requested' }> {
    const socket = this.ctx.socket();
    const reply = await attempt(() => groupQuery(socket, '@g.us', 'set', [{ tag: 'invite', attrs: { code } }]), {
      notFound: 'invite code',
      refused: 'WhatsApp refused to join with this invite',
    });
    const joined = getBinaryNodeChild(reply, 'group')?.attrs.jid;
    if (joined) return { groupId: joined, status: 'joined' };
    const requested = getBinaryNodeChild(reply, 'membership_approval_request')?.attrs.jid;
    if (requested) return { groupId: requested, status: 'requested' };
    throw refusal(new Error('WhatsApp answered the join without naming the group'), { notFound: 'group', refused: '' });
  }

  async leave(groupId: string): Promise<void> {
    const socket = this.ctx.socket();
    await attempt(() => socket.groupLeave(groupId), this.text(groupId, 'leave'));
    this.ctx.groupCache.del(groupId);
  }

  async joinRequests(groupId: string, page: PageRequest): Promise<PageOf<JoinRequest>> {
    const socket = this.ctx.socket();
    const requests = await attempt(() => socket.groupRequestParticipantsList(groupId), this.text(groupId, 'see join requests'));
    const all = requests.map((attrs) => {
      const raw = attrs as Record<string, string | undefined>;
      return { ...personOf(this.ctx.addresses, raw.jid ?? '', raw.phone_number), requestedAt: Number(raw.request_time ?? 0) };
    });
    return pageOf(all, page);
  }

  async handleJoinRequests(groupId: string, action: 'approve' | 'reject', numbers: string[]): Promise<ParticipantResult[]> {
    const socket = this.ctx.socket();
    const reply = await attempt(
      () => socket.groupRequestParticipantsUpdate(groupId, phoneJids(numbers), action),
      this.text(groupId, `${action} join requests`),
    );
    this.ctx.groupCache.del(groupId);
    return outcomes(numbers, reply, action, this.ctx);
  }

  // --- helpers ---

  /** Cached metadata, or fetched (and cached) when missing. */
  async metadata(groupId: string): Promise<GroupMetadata> {
    const cached = this.ctx.groupCache.get<GroupMetadata>(groupId);
    if (cached) return cached;
    const socket = this.ctx.socket();
    const meta = await attempt(() => socket.groupMetadata(groupId), this.text(groupId, 'see this group'));
    await this.learn([meta]);
    this.ctx.groupCache.set(groupId, meta);
    return meta;
  }

  /** Metadata after a change: the cached entry is stale. */
  async fresh(groupId: string): Promise<GroupInfo> {
    this.ctx.groupCache.del(groupId);
    return this.info(groupId);
  }

  /** LID <-> phone pairs that group metadata reveals, for the directory. */
  private async learn(groups: GroupMetadata[]): Promise<void> {
    const pairs = groups.flatMap((meta) => meta.participants.map((p) => ({ lid: p.lid ?? p.id, pn: p.phoneNumber ?? p.id })));
    await this.ctx.addresses.remember(pairs);
  }

  private code(code: string | undefined): string {
    if (!code) throw refusal(new Error('WhatsApp answered without an invite code'), { notFound: 'invite code', refused: '' });
    return code;
  }

  private text(groupId: string, what: string): { notFound: string; refused: string } {
    return {
      notFound: `group ${groupId}`,
      refused: `not allowed to ${what} in group ${groupId}: only its admins can, or this account is not a participant`,
    };
  }
}
