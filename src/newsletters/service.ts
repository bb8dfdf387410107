/** Newsletters (channels): the /newsletter routes' logic over the session's newsletter capability. */
import { errors } from '../errors.js';
import { decodeImage } from '../http/image-input.js';
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import { inviteCodeOf, type ImageInput, type NewsletterOperations, type PageRequest } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export class NewsletterService {
  constructor(private readonly sessions: SessionRegistry) {}

  private newsletters(instance: Instance): Promise<NewsletterOperations> {
    return capabilityOf(this.sessions, instance, 'newsletters');
  }

  async create(instance: Instance, input: { name: string; description?: string | undefined; picture?: string | undefined }) {
    const picture = input.picture !== undefined ? decodeImage(input.picture) : undefined;
    return (await this.newsletters(instance)).create({
      name: input.name,
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(picture ? { picture } : {}),
    });
  }

  async list(instance: Instance, page: PageRequest, role: 'owner' | 'subscriber' | undefined) {
    const { items, total } = await (await this.newsletters(instance)).list(page, role);
    return { items, total, ...page };
  }

  async info(instance: Instance, ref: { newsletterId?: string | undefined; inviteCode?: string | undefined }) {
    const newsletters = await this.newsletters(instance);
    if (ref.newsletterId !== undefined) return newsletters.info({ newsletterId: ref.newsletterId });
    if (ref.inviteCode !== undefined) return newsletters.info({ inviteCode: inviteCodeOf(ref.inviteCode) });
    throw errors.badRequest('give newsletterId or inviteCode');
  }

  async update(
    instance: Instance,
    newsletterId: string,
    input: { name?: string | undefined; description?: string | undefined; picture?: string | null | undefined },
  ) {
    const changes: { name?: string; description?: string; picture?: ImageInput | null } = {};
    if (input.name !== undefined) changes.name = input.name;
    if (input.description !== undefined) changes.description = input.description;
    if (input.picture !== undefined) changes.picture = input.picture === null ? null : decodeImage(input.picture);
    return (await this.newsletters(instance)).update(newsletterId, changes);
  }

  async delete(instance: Instance, newsletterId: string) {
    await (await this.newsletters(instance)).delete(newsletterId);
    return { newsletterId, deleted: true as const };
  }

  async follow(instance: Instance, newsletterId: string, follow: boolean) {
    const newsletters = await this.newsletters(instance);
    return follow ? newsletters.follow(newsletterId) : newsletters.unfollow(newsletterId);
  }

  async setMuted(instance: Instance, newsletterId: string, muted: boolean) {
    return (await this.newsletters(instance)).setMuted(newsletterId, muted);
  }

  async messages(instance: Instance, newsletterId: string, page: PageRequest) {
    const { items, total } = await (await this.newsletters(instance)).messages(newsletterId, page);
    return { items, total, ...page };
  }

  async send(instance: Instance, newsletterId: string, text: string) {
    return (await this.newsletters(instance)).send(newsletterId, text);
  }
}
