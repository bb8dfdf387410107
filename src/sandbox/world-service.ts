/** What the /sandbox world routes do: virtual accounts, contacts using invites, callers hanging up. */
import { errors } from '../errors.js';
import { inviteCodeOf, toJid, type BusinessProfile } from '../network/port.js';
import { isParticipant, joinByInvite, leaveGroup } from '../network/sandbox/groups.js';
import { DEFAULT_PRIVACY, type SandboxWorld } from '../network/sandbox/world.js';

export interface AccountInput {
  number: string;
  pushName?: string | undefined;
  about?: string | undefined;
  business?: boolean | undefined;
  businessProfile?: Partial<BusinessProfile> | undefined;
}

export class SandboxWorldService {
  constructor(private readonly world: SandboxWorld) {}

  /** Creates or updates an account; the number is on the sandbox network from then on. */
  async upsertAccount(input: AccountInput) {
    const account = this.world.account(input.number);
    account.privacy = { ...DEFAULT_PRIVACY, ...account.privacy };
    if (input.pushName !== undefined) {
      account.pushName = input.pushName;
      // Messages the virtual contact sends carry this name too.
      this.world.network.setName(input.number, input.pushName);
    }
    if (input.about !== undefined) {
      account.about = input.about;
      account.aboutTimestamp = this.world.now();
    }
    if (input.business === false) account.business = null;
    if (input.business === true || input.businessProfile !== undefined) {
      account.business = {
        description: null,
        category: null,
        email: null,
        website: [],
        address: null,
        ...account.business,
        ...input.businessProfile,
      };
    }
    await this.world.saveAccount(account);
    const linked = this.world.network.sessionOf(input.number);
    return {
      number: account.number,
      jid: toJid(account.number),
      pushName: this.world.displayName(account.number),
      about: account.about,
      isBusiness: account.business !== null,
      linked: linked?.isConnected() ?? false,
    };
  }

  async contactJoins(number: string, inviteCode: string) {
    const code = inviteCodeOf(inviteCode);
    const group = [...this.world.groups.values()].find((g) => g.inviteCode === code && !g.isCommunityAnnounce);
    if (!group) throw errors.notFoundText('invite code is invalid or was revoked');
    return joinByInvite(this.world, group, number);
  }

  async contactLeaves(number: string, groupId: string) {
    const group = this.world.groups.get(groupId);
    if (!group) throw errors.notFound(`group ${groupId}`);
    if (!isParticipant(group, number)) throw errors.conflict(`${number} is not a participant of group ${groupId}`);
    await leaveGroup(this.world, group, number);
    return { groupId, left: true as const };
  }

  /** The caller hangs up before the call was answered or rejected: a missed call. */
  async callerHangsUp(callId: string, to: string) {
    this.world.network.connectedSession(to); // 404 naming the number when no instance is there to tell
    const call = this.world.callsOf(to).find((c) => c.callId === callId);
    if (!call) throw errors.notFound(`call ${callId} to ${to}`);
    if (call.status !== 'ringing') throw errors.conflict(`call ${callId} is not ringing (it is ${call.status})`);
    await this.world.emitTo(to, {
      type: 'CALL',
      data: {
        id: callId,
        from: call.from,
        status: 'timeout',
        isVideo: call.isVideo,
        isGroup: call.isGroup,
        timestamp: this.world.now(),
        offline: false,
      },
    });
    await this.world.saveCalls(to);
    return { callId, status: 'missed' as const };
  }
}
