/**
 * Labels of a WhatsApp Business account: app-state patches (`label_edit` for create/edit/delete,
 * `label_jid` / `label_message` associations) through Baileys' addLabel, addChatLabel,
 * removeChatLabel, addMessageLabel and removeMessageLabel. WhatsApp serves no label list on demand;
 * the list is what the driver kept of `labels.edit` / `labels.association` (state-store.ts) and of
 * its own changes. A personal account has no labels: 403, as the sandbox answers.
 */
import { errors } from '../../errors.js';
import type { Label, LabelOperations, LabelTarget, PageOf, PageRequest } from '../port.js';
import { wa, type WhatsAppLink } from './capabilities.js';
import { pageOf } from '../paging.js';
import { isBusinessAccount, type LabelRow } from './state-store.js';

/** WhatsApp Business keeps at most this many labels per account (as the sandbox). */
export const MAX_LABELS = 20;

function labelOf(row: LabelRow): Label {
  return { labelId: row.label_id, name: row.name, color: row.color };
}

export class WhatsAppLabels implements LabelOperations {
  constructor(private readonly link: WhatsAppLink) {}

  async list(page: PageRequest): Promise<PageOf<Label>> {
    return pageOf((await this.businessLabels()).map(labelOf), page);
  }

  async create(name: string, color: number): Promise<Label> {
    const all = await this.businessLabels();
    if (all.length >= MAX_LABELS) throw errors.conflict(`an account has at most ${MAX_LABELS} labels; delete one first`);
    refuseDuplicate(all, name);
    // Label ids are the account's own counter (the phone's five predefined labels are 1-5).
    const labelId = String(all.reduce((max, row) => Math.max(max, Number(row.label_id) || 0), 0) + 1);
    const label: Label = { labelId, name, color };
    await this.save(label, false);
    return label;
  }

  async edit(labelId: string, changes: { name?: string; color?: number }): Promise<Label> {
    const all = await this.businessLabels();
    const current = find(all, labelId);
    if (changes.name !== undefined && changes.name.toLowerCase() !== current.name.toLowerCase()) refuseDuplicate(all, changes.name);
    const label: Label = { labelId, name: changes.name ?? current.name, color: changes.color ?? current.color };
    await this.save(label, false);
    return label;
  }

  async delete(labelId: string): Promise<void> {
    const current = find(await this.businessLabels(), labelId);
    await this.save(labelOf(current), true);
  }

  apply(labelId: string, target: LabelTarget): Promise<string[]> {
    return this.change(labelId, target, true);
  }

  remove(labelId: string, target: LabelTarget): Promise<string[]> {
    return this.change(labelId, target, false);
  }

  private async save(label: Label, deleted: boolean): Promise<void> {
    const { instanceId, state } = this.link;
    await wa(() => this.link.socket().addLabel('', { id: label.labelId, name: label.name, color: label.color, deleted }));
    if (deleted) await state.deleteLabel(instanceId, label.labelId);
    else await state.saveLabel(instanceId, label);
  }

  private async change(labelId: string, target: LabelTarget, on: boolean): Promise<string[]> {
    find(await this.businessLabels(), labelId);
    const { instanceId, state } = this.link;
    const chatJid = this.link.addresses.resolve(target.chatId).jid;
    const messageId = target.messageId;
    if (messageId !== undefined) {
      const message = await this.link.messages.find(instanceId, messageId);
      if (!message || message.key.remoteJid !== chatJid) throw errors.notFoundText(`message ${messageId} not found in chat ${chatJid}`);
    }
    const key = messageId ?? '';
    const before = (await state.labelsOn(instanceId, chatJid, [key])).get(key) ?? [];
    if (before.includes(labelId) !== on) {
      const socket = this.link.socket();
      await wa(() => {
        if (messageId !== undefined)
          return on ? socket.addMessageLabel(chatJid, messageId, labelId) : socket.removeMessageLabel(chatJid, messageId, labelId);
        return on ? socket.addChatLabel(chatJid, labelId) : socket.removeChatLabel(chatJid, labelId);
      });
      await state.linkLabel(instanceId, labelId, chatJid, messageId, on);
    }
    return (await state.labelsOn(instanceId, chatJid, [key])).get(key) ?? [];
  }

  private async businessLabels(): Promise<LabelRow[]> {
    if (!isBusinessAccount(this.link.creds().platform)) {
      throw errors.forbidden('labels are only available to WhatsApp Business accounts; this is a personal account');
    }
    return this.link.state.labels(this.link.instanceId);
  }
}

function find(all: LabelRow[], labelId: string): LabelRow {
  const row = all.find((l) => l.label_id === labelId);
  if (!row) throw errors.notFound(`label ${labelId}`);
  return row;
}

function refuseDuplicate(all: LabelRow[], name: string): void {
  if (all.some((l) => l.name.toLowerCase() === name.toLowerCase())) throw errors.conflict(`a label named ${name} already exists`);
}
