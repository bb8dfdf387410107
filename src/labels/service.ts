/** Labels of a business instance: the /label routes' logic over the session's label capability. */
import { chatJidOf } from '../network/addressing.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import type { LabelOperations, PageRequest } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export interface LabelTargetInput {
  labelId: string;
  chatId: string;
  messageId?: string | undefined;
}

export class LabelService {
  constructor(private readonly sessions: SessionRegistry) {}

  private labels(instance: Instance): Promise<LabelOperations> {
    return capabilityOf(this.sessions, instance, 'labels');
  }

  async list(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.labels(instance)).list(page);
    return { items, total, ...page };
  }

  async create(instance: Instance, name: string, color: number) {
    return (await this.labels(instance)).create(name, color);
  }

  async edit(instance: Instance, labelId: string, changes: { name?: string | undefined; color?: number | undefined }) {
    const patch: { name?: string; color?: number } = {};
    if (changes.name !== undefined) patch.name = changes.name;
    if (changes.color !== undefined) patch.color = changes.color;
    return (await this.labels(instance)).edit(labelId, patch);
  }

  async delete(instance: Instance, labelId: string) {
    await (await this.labels(instance)).delete(labelId);
    return { labelId, deleted: true as const };
  }

  async apply(instance: Instance, input: LabelTargetInput, on: boolean) {
    const labels = await this.labels(instance);
    const chatId = chatJidOf(input.chatId);
    const target = input.messageId !== undefined ? { chatId, messageId: input.messageId } : { chatId };
    const now = on ? await labels.apply(input.labelId, target) : await labels.remove(input.labelId, target);
    return { labelId: input.labelId, ...target, labels: now };
  }
}
