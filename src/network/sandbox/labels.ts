/**
 * Labels of a sandbox business account: at most 20, applied to chats and to messages. Personal
 * accounts have no labels (403, as on the real network); POST /sandbox/accounts makes an account
 * a business one.
 */
import { errors } from '../../errors.js';
import type { Label, LabelOperations, LabelTarget, PageOf, PageRequest } from '../port.js';
import { SandboxChats } from './chats.js';
import { type AccountState, type SandboxWorld } from './world.js';
import { pageOf } from '../paging.js';

/** WhatsApp Business keeps at most this many labels per account. */
export const MAX_LABELS = 20;

export class SandboxLabels implements LabelOperations {
  private readonly chats: SandboxChats;

  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {
    this.chats = new SandboxChats(world, me);
  }

  async list(page: PageRequest): Promise<PageOf<Label>> {
    const account = this.businessAccount();
    const sorted = [...account.labels].sort((a, b) => Number(a.labelId) - Number(b.labelId));
    const { items, total } = pageOf(sorted, page);
    return { items: items.map((l) => ({ ...l })), total };
  }

  async create(name: string, color: number): Promise<Label> {
    const account = this.businessAccount();
    if (account.labels.length >= MAX_LABELS) throw errors.conflict(`an account has at most ${MAX_LABELS} labels; delete one first`);
    this.refuseDuplicate(account, name);
    const label: Label = { labelId: String(account.nextLabelId), name, color };
    account.nextLabelId += 1;
    account.labels.push(label);
    await this.world.saveAccount(account);
    await this.world.emitTo(account.number, { type: 'LABEL', data: { action: 'create', label: { ...label } } });
    return { ...label };
  }

  async edit(labelId: string, changes: { name?: string; color?: number }): Promise<Label> {
    const account = this.businessAccount();
    const label = this.label(account, labelId);
    if (changes.name !== undefined && changes.name.toLowerCase() !== label.name.toLowerCase()) this.refuseDuplicate(account, changes.name);
    if (changes.name !== undefined) label.name = changes.name;
    if (changes.color !== undefined) label.color = changes.color;
    await this.world.saveAccount(account);
    await this.world.emitTo(account.number, { type: 'LABEL', data: { action: 'edit', label: { ...label } } });
    return { ...label };
  }

  async delete(labelId: string): Promise<void> {
    const account = this.businessAccount();
    const label = this.label(account, labelId);
    account.labels = account.labels.filter((l) => l.labelId !== labelId);
    for (const chat of this.world.chatsOf(account.number).values()) {
      chat.labels = chat.labels.filter((id) => id !== labelId);
      for (const [messageId, ids] of Object.entries(chat.messageLabels)) {
        const left = ids.filter((id) => id !== labelId);
        if (left.length > 0) chat.messageLabels[messageId] = left;
        else delete chat.messageLabels[messageId];
      }
    }
    await this.world.saveAccount(account);
    await this.world.saveChats(account.number);
    await this.world.emitTo(account.number, { type: 'LABEL', data: { action: 'delete', label: { ...label } } });
  }

  apply(labelId: string, target: LabelTarget): Promise<string[]> {
    return this.change(labelId, target, true);
  }

  remove(labelId: string, target: LabelTarget): Promise<string[]> {
    return this.change(labelId, target, false);
  }

  private async change(labelId: string, target: LabelTarget, on: boolean): Promise<string[]> {
    const account = this.businessAccount();
    await this.world.hydrate(account.number);
    const label = this.label(account, labelId);
    const chat = this.chats.existing(target.chatId);
    let current: string[];
    if (target.messageId !== undefined) {
      const messageId = target.messageId;
      if (!(await this.world.hasMessage(account.number, chat, messageId))) {
        throw errors.notFoundText(`message ${messageId} not found in chat ${chat.jid}`);
      }
      current = chat.messageLabels[messageId] ?? [];
      const next = on ? [...new Set([...current, labelId])] : current.filter((id) => id !== labelId);
      if (next.length > 0) chat.messageLabels[messageId] = next;
      else delete chat.messageLabels[messageId];
      if (next.length === current.length) return next;
      current = next;
    } else {
      const next = on ? [...new Set([...chat.labels, labelId])] : chat.labels.filter((id) => id !== labelId);
      const unchanged = next.length === chat.labels.length;
      chat.labels = next;
      if (unchanged) return [...next];
      current = next;
    }
    await this.world.saveChats(account.number);
    await this.world.emitTo(account.number, {
      type: 'LABEL',
      data: {
        action: on ? 'apply' : 'remove',
        label: { ...label },
        chatId: chat.jid,
        ...(target.messageId !== undefined ? { messageId: target.messageId } : {}),
      },
    });
    return [...current];
  }

  private businessAccount(): AccountState {
    const number = this.me();
    const account = this.world.findAccount(number);
    if (!account?.business) {
      throw errors.forbidden('labels are only available to WhatsApp Business accounts; this is a personal account');
    }
    return account;
  }

  private label(account: AccountState, labelId: string): Label {
    const label = account.labels.find((l) => l.labelId === labelId);
    if (!label) throw errors.notFound(`label ${labelId}`);
    return label;
  }

  private refuseDuplicate(account: AccountState, name: string): void {
    if (account.labels.some((l) => l.name.toLowerCase() === name.toLowerCase()))
      throw errors.conflict(`a label named ${name} already exists`);
  }
}
