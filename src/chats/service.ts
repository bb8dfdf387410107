/** Chats of an instance: the /chat routes' logic over the session's chat capability. */
import type { Clock } from '../clock.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import { chatJidOf } from '../network/addressing.js';
import type { ChatFilter, ChatOperations, PageRequest } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export class ChatService {
  constructor(
    private readonly sessions: SessionRegistry,
    private readonly clock: Clock,
  ) {}

  private chats(instance: Instance): Promise<ChatOperations> {
    return capabilityOf(this.sessions, instance, 'chats');
  }

  async list(instance: Instance, filter: ChatFilter, page: PageRequest) {
    const { items, total } = await (await this.chats(instance)).list(filter, page);
    return { items, total, ...page };
  }

  async get(instance: Instance, chatId: string) {
    return (await this.chats(instance)).get(chatJidOf(chatId));
  }

  async setPinned(instance: Instance, chatId: string, pinned: boolean) {
    return (await this.chats(instance)).setPinned(chatJidOf(chatId), pinned);
  }

  async setArchived(instance: Instance, chatId: string, archived: boolean) {
    return (await this.chats(instance)).setArchived(chatJidOf(chatId), archived);
  }

  /** `duration` in seconds; none mutes for ever. */
  async mute(instance: Instance, chatId: string, duration: number | undefined) {
    const until = duration === undefined ? null : Math.floor(this.clock.now() / 1000) + duration;
    return (await this.chats(instance)).mute(chatJidOf(chatId), until);
  }

  async unmute(instance: Instance, chatId: string) {
    return (await this.chats(instance)).unmute(chatJidOf(chatId));
  }

  async markUnread(instance: Instance, chatId: string) {
    return (await this.chats(instance)).markUnread(chatJidOf(chatId));
  }

  async markRead(instance: Instance, chatId: string) {
    return (await this.chats(instance)).markRead(chatJidOf(chatId));
  }

  async delete(instance: Instance, chatId: string) {
    const jid = chatJidOf(chatId);
    await (await this.chats(instance)).delete(jid);
    return { chatId: jid, deleted: true as const };
  }

  async clear(instance: Instance, chatId: string) {
    return (await this.chats(instance)).clear(chatJidOf(chatId));
  }

  async history(instance: Instance, chatId: string, page: PageRequest) {
    const { items, total } = await (await this.chats(instance)).history(chatJidOf(chatId), page);
    return { items, total, ...page };
  }

  async requestHistory(instance: Instance, chatId: string, count: number) {
    const jid = chatJidOf(chatId);
    const { requested } = await (await this.chats(instance)).requestHistory(jid, count);
    return { chatId: jid, requested };
  }

  async check(instance: Instance, numbers: string[]) {
    return { items: await (await this.chats(instance)).checkNumbers([...new Set(numbers)]) };
  }
}
