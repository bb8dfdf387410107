/** Groups of an instance: the /group routes' logic over the session's group capability. */
import { decodeImage } from '../http/image-input.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import {
  GROUP_INVITE_LINK_PREFIX,
  inviteCodeOf,
  type GroupOperations,
  type GroupSettings,
  type PageRequest,
  type ParticipantAction,
} from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';
import { errors } from '../errors.js';

export class GroupService {
  constructor(private readonly sessions: SessionRegistry) {}

  private groups(instance: Instance): Promise<GroupOperations> {
    return capabilityOf(this.sessions, instance, 'groups');
  }

  async create(instance: Instance, input: { subject: string; participants: string[]; description?: string | undefined }) {
    return (await this.groups(instance)).create(input.subject, input.participants, input.description);
  }

  async info(instance: Instance, groupId: string) {
    return (await this.groups(instance)).info(groupId);
  }

  async list(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.groups(instance)).list(page);
    return { items, total, ...page };
  }

  async participants(instance: Instance, groupId: string, action: ParticipantAction, numbers: string[]) {
    return { groupId, results: await (await this.groups(instance)).updateParticipants(groupId, action, numbers) };
  }

  async picture(instance: Instance, groupId: string) {
    return (await this.groups(instance)).picture(groupId);
  }

  async setPicture(instance: Instance, groupId: string, image: string) {
    const decoded = decodeImage(image);
    return (await this.groups(instance)).setPicture(groupId, decoded);
  }

  async removePicture(instance: Instance, groupId: string) {
    return (await this.groups(instance)).removePicture(groupId);
  }

  async setSubject(instance: Instance, groupId: string, subject: string) {
    return (await this.groups(instance)).setSubject(groupId, subject);
  }

  async setDescription(instance: Instance, groupId: string, description: string) {
    return (await this.groups(instance)).setDescription(groupId, description);
  }

  async updateSettings(instance: Instance, groupId: string, settings: Partial<GroupSettings>) {
    return (await this.groups(instance)).updateSettings(groupId, settings);
  }

  async inviteLink(instance: Instance, groupId: string) {
    return inviteView(groupId, await (await this.groups(instance)).inviteCode(groupId));
  }

  async revokeInvite(instance: Instance, groupId: string) {
    return inviteView(groupId, await (await this.groups(instance)).revokeInvite(groupId));
  }

  async inviteInfo(instance: Instance, inviteCode: string) {
    return (await this.groups(instance)).inviteInfo(code(inviteCode));
  }

  async join(instance: Instance, inviteCode: string) {
    return (await this.groups(instance)).join(code(inviteCode));
  }

  async leave(instance: Instance, groupId: string) {
    await (await this.groups(instance)).leave(groupId);
    return { groupId, left: true as const };
  }

  async joinRequests(instance: Instance, groupId: string, page: PageRequest) {
    const { items, total } = await (await this.groups(instance)).joinRequests(groupId, page);
    return { items, total, ...page };
  }

  async handleJoinRequests(instance: Instance, groupId: string, action: 'approve' | 'reject', numbers: string[]) {
    return { groupId, results: await (await this.groups(instance)).handleJoinRequests(groupId, action, numbers) };
  }
}

function inviteView(groupId: string, inviteCode: string) {
  return { groupId, inviteCode, inviteLink: `${GROUP_INVITE_LINK_PREFIX}${inviteCode}` };
}

function code(inviteCode: string): string {
  const extracted = inviteCodeOf(inviteCode);
  if (!/^[A-Za-z0-9]{6,64}$/.test(extracted)) throw errors.badRequest('inviteCode is not an invite code or invite link');
  return extracted;
}
