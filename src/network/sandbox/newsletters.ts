/**
 * Newsletters (channels) on the sandbox network: an owner posts, followers receive the posts as
 * MESSAGE events and can mute them; anyone can read a newsletter's info and posts by id or invite.
 */
import { errors } from '../../errors.js';
import {
  NEWSLETTER_INVITE_LINK_PREFIX,
  type CanonicalEvent,
  type ImageInput,
  type NewsletterInfo,
  type NewsletterMessage,
  type NewsletterOperations,
  type NewsletterRole,
  type PageOf,
  type PageRequest,
  type SentMessage,
} from '../port.js';
import { newMessageId } from './network.js';
import { LIMITS, newInviteCode, pictureUrl, storePicture, type NewsletterState, type SandboxWorld } from './world.js';
import { pageOf } from '../paging.js';

function newsletterEvent(newsletterId: string, action: string, extra: Record<string, unknown> = {}): CanonicalEvent {
  return { type: 'NEWSLETTER', data: { id: newsletterId, action, ...extra } };
}

export class SandboxNewsletters implements NewsletterOperations {
  constructor(
    private readonly world: SandboxWorld,
    private readonly me: () => string,
  ) {}

  async create(input: { name: string; description?: string; picture?: ImageInput }): Promise<NewsletterInfo> {
    const owner = this.me();
    const newsletter: NewsletterState = {
      newsletterId: this.world.newNewsletterId(),
      name: input.name,
      description: input.description ? input.description : null,
      picture: input.picture ? storePicture(input.picture) : null,
      inviteCode: newInviteCode(),
      owner,
      creation: this.world.now(),
      followers: [],
      posts: [],
      nextServerId: 100,
    };
    this.world.newsletters.set(newsletter.newsletterId, newsletter);
    await this.world.saveNewsletter(newsletter);
    this.world.chat(owner, newsletter.newsletterId).conversationTimestamp = newsletter.creation;
    await this.world.emitTo(owner, newsletterEvent(newsletter.newsletterId, 'create', { name: newsletter.name }));
    return this.view(newsletter, owner);
  }

  async list(page: PageRequest, role?: NewsletterRole): Promise<PageOf<NewsletterInfo>> {
    const viewer = this.me();
    const mine = [...this.world.newsletters.values()]
      .filter((n) => {
        const own = this.roleOf(n, viewer);
        return own !== 'guest' && (role === undefined || own === role);
      })
      .sort((a, b) => b.creation - a.creation);
    const { items, total } = pageOf(mine, page);
    return { items: items.map((n) => this.view(n, viewer)), total };
  }

  async info(ref: { newsletterId: string } | { inviteCode: string }): Promise<NewsletterInfo> {
    const viewer = this.me();
    if ('newsletterId' in ref) return this.view(this.byId(ref.newsletterId), viewer);
    for (const newsletter of this.world.newsletters.values()) {
      if (newsletter.inviteCode === ref.inviteCode) return this.view(newsletter, viewer);
    }
    throw errors.notFoundText('newsletter invite code is invalid');
  }

  async update(
    newsletterId: string,
    changes: { name?: string; description?: string; picture?: ImageInput | null },
  ): Promise<NewsletterInfo> {
    const owner = this.me();
    const newsletter = this.ownedBy(newsletterId, owner, 'change it');
    const applied: Record<string, unknown> = {};
    if (changes.name !== undefined) newsletter.name = applied.name = changes.name;
    if (changes.description !== undefined)
      newsletter.description = applied.description = changes.description === '' ? null : changes.description;
    if (changes.picture !== undefined) {
      newsletter.picture = changes.picture ? storePicture(changes.picture) : null;
      applied.pictureId = newsletter.picture?.pictureId ?? null;
    }
    await this.world.saveNewsletter(newsletter);
    await this.world.emitToAll(this.audience(newsletter), newsletterEvent(newsletterId, 'update', { changes: applied }));
    return this.view(newsletter, owner);
  }

  async delete(newsletterId: string): Promise<void> {
    const owner = this.me();
    const newsletter = this.ownedBy(newsletterId, owner, 'delete it');
    const audience = this.audience(newsletter);
    await this.world.removeNewsletter(newsletterId);
    await this.world.emitToAll(audience, newsletterEvent(newsletterId, 'delete'));
  }

  async follow(newsletterId: string): Promise<NewsletterInfo> {
    const follower = this.me();
    const newsletter = this.byId(newsletterId);
    if (newsletter.owner === follower) throw errors.conflict(`you own newsletter ${newsletterId}`);
    if (newsletter.followers.some((f) => f.number === follower)) throw errors.conflict(`already following newsletter ${newsletterId}`);
    newsletter.followers.push({ number: follower, muted: false, since: this.world.now() });
    await this.world.saveNewsletter(newsletter);
    this.world.chat(follower, newsletterId).conversationTimestamp ??= this.world.now();
    await this.world.emitTo(follower, newsletterEvent(newsletterId, 'follow'));
    return this.view(newsletter, follower);
  }

  async unfollow(newsletterId: string): Promise<NewsletterInfo> {
    const follower = this.me();
    const newsletter = this.byId(newsletterId);
    if (!newsletter.followers.some((f) => f.number === follower)) throw errors.conflict(`not following newsletter ${newsletterId}`);
    newsletter.followers = newsletter.followers.filter((f) => f.number !== follower);
    await this.world.saveNewsletter(newsletter);
    await this.world.emitTo(follower, newsletterEvent(newsletterId, 'unfollow'));
    return this.view(newsletter, follower);
  }

  async setMuted(newsletterId: string, muted: boolean): Promise<NewsletterInfo> {
    const follower = this.me();
    const newsletter = this.byId(newsletterId);
    const entry = newsletter.followers.find((f) => f.number === follower);
    if (!entry) throw errors.conflict(`follow newsletter ${newsletterId} before muting or unmuting it`);
    if (entry.muted !== muted) {
      entry.muted = muted;
      await this.world.saveNewsletter(newsletter);
      await this.world.emitTo(follower, newsletterEvent(newsletterId, muted ? 'mute' : 'unmute'));
    }
    return this.view(newsletter, follower);
  }

  async messages(newsletterId: string, page: PageRequest): Promise<PageOf<NewsletterMessage>> {
    const viewer = this.me();
    const newsletter = this.byId(newsletterId);
    const newestFirst = [...newsletter.posts].reverse();
    const { items, total } = pageOf(newestFirst, page);
    return {
      items: items.map((post) => ({
        key: { remoteJid: newsletterId, fromMe: newsletter.owner === viewer, id: post.id },
        serverId: post.serverId,
        message: { conversation: post.text },
        messageTimestamp: post.timestamp,
      })),
      total,
    };
  }

  async send(newsletterId: string, text: string): Promise<SentMessage & { serverId: number }> {
    const owner = this.me();
    const newsletter = this.ownedBy(newsletterId, owner, 'post in it');
    const post = { id: newMessageId(), serverId: newsletter.nextServerId, text, timestamp: this.world.now() };
    newsletter.nextServerId += 1;
    newsletter.posts.push(post);
    if (newsletter.posts.length > LIMITS.postsPerNewsletter)
      newsletter.posts.splice(0, newsletter.posts.length - LIMITS.postsPerNewsletter);
    await this.world.saveNewsletter(newsletter);
    const message = { conversation: text };
    const key = { remoteJid: newsletterId, fromMe: true, id: post.id };
    await this.world.emitTo(owner, {
      type: 'SEND_MESSAGE',
      data: { key, message, messageTimestamp: post.timestamp, serverId: post.serverId, status: 'SENT' },
    });
    await this.world.emitToAll(
      newsletter.followers.map((f) => f.number),
      {
        type: 'MESSAGE',
        data: {
          key: { ...key, fromMe: false },
          pushName: newsletter.name,
          message,
          messageTimestamp: post.timestamp,
          serverId: post.serverId,
        },
      },
    );
    return { key, message, messageTimestamp: post.timestamp, status: 'SENT', serverId: post.serverId };
  }

  private byId(newsletterId: string): NewsletterState {
    const newsletter = this.world.newsletters.get(newsletterId);
    if (!newsletter) throw errors.notFound(`newsletter ${newsletterId}`);
    return newsletter;
  }

  private ownedBy(newsletterId: string, owner: string, what: string): NewsletterState {
    const newsletter = this.byId(newsletterId);
    if (newsletter.owner !== owner) throw errors.forbidden(`only the owner of newsletter ${newsletterId} can ${what}`);
    return newsletter;
  }

  private audience(newsletter: NewsletterState): string[] {
    return [newsletter.owner, ...newsletter.followers.map((f) => f.number)];
  }

  private roleOf(newsletter: NewsletterState, viewer: string): NewsletterRole {
    if (newsletter.owner === viewer) return 'owner';
    return newsletter.followers.some((f) => f.number === viewer) ? 'subscriber' : 'guest';
  }

  private view(newsletter: NewsletterState, viewer: string): NewsletterInfo {
    return {
      newsletterId: newsletter.newsletterId,
      name: newsletter.name,
      description: newsletter.description,
      inviteCode: newsletter.inviteCode,
      inviteLink: `${NEWSLETTER_INVITE_LINK_PREFIX}${newsletter.inviteCode}`,
      pictureUrl: pictureUrl(newsletter.picture),
      role: this.roleOf(newsletter, viewer),
      muted: newsletter.followers.find((f) => f.number === viewer)?.muted ?? false,
      followers: newsletter.followers.length,
      verified: false,
      creation: newsletter.creation,
    };
  }
}
