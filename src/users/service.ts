/** People and the instance's own profile: the /user routes' logic over the session's user capability. */
import { decodeImage } from '../http/image-input.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import { toJid, type PageRequest, type PrivacySettings, type UserOperations } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export class UserService {
  constructor(private readonly sessions: SessionRegistry) {}

  private users(instance: Instance): Promise<UserOperations> {
    return capabilityOf(this.sessions, instance, 'users');
  }

  async info(instance: Instance, number: string) {
    return (await this.users(instance)).info(number);
  }

  async avatar(instance: Instance, number: string) {
    return (await this.users(instance)).avatar(number);
  }

  async contacts(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.users(instance)).contacts(page);
    return { items, total, ...page };
  }

  async resolveAddresses(instance: Instance, ids: string[]) {
    return { items: await (await this.users(instance)).resolveAddresses(ids) };
  }

  async privacy(instance: Instance) {
    return (await this.users(instance)).privacy();
  }

  async setPrivacy(instance: Instance, patch: Partial<PrivacySettings>) {
    return (await this.users(instance)).setPrivacy(patch);
  }

  async setBlocked(instance: Instance, number: string, blocked: boolean) {
    const users = await this.users(instance);
    if (blocked) await users.block(number);
    else await users.unblock(number);
    return { jid: toJid(number), number, blocked };
  }

  async blocklist(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.users(instance)).blocklist(page);
    return { items, total, ...page };
  }

  async profile(instance: Instance) {
    return (await this.users(instance)).profile();
  }

  async setName(instance: Instance, name: string) {
    return (await this.users(instance)).setName(name);
  }

  async setAbout(instance: Instance, about: string) {
    return (await this.users(instance)).setAbout(about);
  }

  async setPicture(instance: Instance, image: string) {
    const decoded = decodeImage(image);
    return (await this.users(instance)).setPicture(decoded);
  }

  async removePicture(instance: Instance) {
    return (await this.users(instance)).removePicture();
  }

  async subscribePresence(instance: Instance, number: string) {
    const presence = await (await this.users(instance)).subscribePresence(number);
    return { jid: toJid(number), subscribed: true as const, presence };
  }

  async setPresence(instance: Instance, presence: 'available' | 'unavailable') {
    await (await this.users(instance)).setPresence(presence);
    return { presence };
  }
}
