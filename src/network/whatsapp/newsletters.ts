/**
 * Newsletters (channels) on WhatsApp: the port's NewsletterOperations over Baileys 7. Metadata,
 * follow, mute, update and delete are GraphQL queries (`<iq xmlns="w:mex"><query query_id>` with a
 * JSON body, answered with `<result>` JSON); posts are read with `<iq xmlns="newsletter">
 * <message_updates count>` and written as a plain `<message>` whose server ack carries the post's
 * `server_id`. Events (reactions, views, settings) come from WhatsApp's notifications through
 * translate-in.ts.
 *
 * WhatsApp has no query in Baileys 7 for the list of followed newsletters: `list` answers 501.
 */
import {
  QueryIds,
  S_WHATSAPP_NET,
  XWAPaths,
  generateProfilePicture,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  getUrlFromDirectPath,
  proto,
  type BinaryNode,
} from 'baileys';
import { errors } from '../../errors.js';
import {
  NEWSLETTER_INVITE_LINK_PREFIX,
  type ImageInput,
  type NewsletterInfo,
  type NewsletterMessage,
  type NewsletterOperations,
  type NewsletterRole,
  type PageOf,
  type PageRequest,
  type SentMessage,
} from '../port.js';
import type { OperationsContext } from './operations.js';
import { pageOf } from '../paging.js';
import { attempt, refusalFor } from './refusals.js';
import { messageToJson } from './translate-in.js';

/** A newsletter as WhatsApp's GraphQL answers describe it (create, metadata). */
export interface RawNewsletter {
  id: string;
  state?: { type?: string } | null;
  thread_metadata?: {
    creation_time?: string;
    name?: { text?: string } | null;
    description?: { text?: string } | null;
    invite?: string;
    picture?: { direct_path?: string; id?: string } | null;
    subscribers_count?: string;
    verification?: string;
  } | null;
  viewer_metadata?: { mute?: string; role?: string } | null;
}

/** How long a post waits for the server's ack (it names the post's server id). */
export const POST_ACK_TIMEOUT_MS = 15_000;

/** WhatsApp's viewer role as the port's: admins post like the owner does. */
function roleOf(role: string | undefined): NewsletterRole {
  switch (role) {
    case 'OWNER':
    case 'ADMIN':
      return 'owner';
    case 'SUBSCRIBER':
      return 'subscriber';
    case undefined:
    default:
      return 'guest';
  }
}

export function newsletterInfoOf(raw: RawNewsletter): NewsletterInfo {
  const thread = raw.thread_metadata ?? {};
  const invite = thread.invite ?? '';
  const picture = thread.picture?.direct_path;
  return {
    newsletterId: raw.id,
    name: thread.name?.text ?? '',
    description: thread.description?.text ? thread.description.text : null,
    inviteCode: invite,
    inviteLink: invite ? `${NEWSLETTER_INVITE_LINK_PREFIX}${invite}` : '',
    pictureUrl: picture ? getUrlFromDirectPath(picture) : null,
    role: roleOf(raw.viewer_metadata?.role),
    muted: raw.viewer_metadata?.mute === 'ON',
    followers: Number(thread.subscribers_count ?? 0),
    verified: thread.verification === 'VERIFIED',
    creation: Number(thread.creation_time ?? 0),
  };
}

/** Posts of a `<message_updates>` reply, newest first. */
export function postsOf(newsletterId: string, reply: BinaryNode, fromMe: boolean): NewsletterMessage[] {
  const messages = getBinaryNodeChild(getBinaryNodeChild(reply, 'message_updates'), 'messages');
  const posts = getBinaryNodeChildren(messages, 'message').map((node) => {
    const plaintext = getBinaryNodeChild(node, 'plaintext')?.content;
    const message = plaintext instanceof Uint8Array ? messageToJson(proto.Message.decode(plaintext)) : {};
    return {
      key: { remoteJid: newsletterId, fromMe, id: node.attrs.id ?? node.attrs.server_id ?? '' },
      serverId: Number(node.attrs.server_id ?? 0),
      message,
      messageTimestamp: Number(node.attrs.t ?? 0),
    };
  });
  return posts.sort((a, b) => b.serverId - a.serverId);
}

export class WhatsAppNewsletters implements NewsletterOperations {
  constructor(
    private readonly ctx: OperationsContext,
    private readonly timeoutMs = POST_ACK_TIMEOUT_MS,
  ) {}

  /**
   * The create query is sent as Baileys' newsletterCreate sends it and its answer read here, so a
   * channel created without a picture (`picture: null`) is read as such.
   */
  async create(input: { name: string; description?: string; picture?: ImageInput }): Promise<NewsletterInfo> {
    const created = await this.mex<RawNewsletter>(
      { input: { name: input.name, description: input.description ?? null } },
      QueryIds.CREATE,
      XWAPaths.xwa2_newsletter_create,
      'newsletter',
    );
    if (input.picture) return this.update(created.id, { picture: input.picture });
    return this.info({ newsletterId: created.id });
  }

  list(_page: PageRequest, _role?: NewsletterRole): Promise<PageOf<NewsletterInfo>> {
    return Promise.reject(
      errors.notSupportedText(
        'listing followed newsletters is not supported by the whatsapp driver: Baileys 7 has no query for it; get one by id or invite link instead',
      ),
    );
  }

  async info(ref: { newsletterId: string } | { inviteCode: string }): Promise<NewsletterInfo> {
    const socket = this.ctx.socket();
    const [type, key] = 'newsletterId' in ref ? (['jid', ref.newsletterId] as const) : (['invite', ref.inviteCode] as const);
    const what = type === 'jid' ? `newsletter ${key}` : 'newsletter invite code';
    const raw = await attempt(() => socket.newsletterMetadata(type, key), this.text(what, 'see'));
    if (!raw) throw errors.notFound(`${what}`);
    return newsletterInfoOf(raw as unknown as RawNewsletter);
  }

  /** One `xwa2_newsletter_update` query with every change; a null picture removes it. */
  async update(
    newsletterId: string,
    changes: { name?: string; description?: string; picture?: ImageInput | null },
  ): Promise<NewsletterInfo> {
    const socket = this.ctx.socket();
    const updates: { name?: string; description?: string; picture?: string } = {};
    if (changes.name !== undefined) updates.name = changes.name;
    if (changes.description !== undefined) updates.description = changes.description;
    if (changes.picture === null) updates.picture = '';
    else if (changes.picture) updates.picture = (await generateProfilePicture(changes.picture.data)).img.toString('base64');
    if (Object.keys(updates).length > 0)
      await attempt(() => socket.newsletterUpdate(newsletterId, updates), this.text(`newsletter ${newsletterId}`, 'change'));
    return this.info({ newsletterId });
  }

  async delete(newsletterId: string): Promise<void> {
    const socket = this.ctx.socket();
    await attempt(() => socket.newsletterDelete(newsletterId), this.text(`newsletter ${newsletterId}`, 'delete'));
  }

  async follow(newsletterId: string): Promise<NewsletterInfo> {
    const socket = this.ctx.socket();
    await attempt(() => socket.newsletterFollow(newsletterId), this.text(`newsletter ${newsletterId}`, 'follow'));
    return this.info({ newsletterId });
  }

  async unfollow(newsletterId: string): Promise<NewsletterInfo> {
    const socket = this.ctx.socket();
    await attempt(() => socket.newsletterUnfollow(newsletterId), this.text(`newsletter ${newsletterId}`, 'unfollow'));
    return this.info({ newsletterId });
  }

  async setMuted(newsletterId: string, muted: boolean): Promise<NewsletterInfo> {
    const socket = this.ctx.socket();
    const text = this.text(`newsletter ${newsletterId}`, muted ? 'mute' : 'unmute');
    await attempt(() => (muted ? socket.newsletterMute(newsletterId) : socket.newsletterUnmute(newsletterId)), text);
    return this.info({ newsletterId });
  }

  /**
   * WhatsApp returns the newest `count` posts: the page is cut from the newest offset + limit.
   * `total` is how many posts that answer held (WhatsApp does not tell the channel's total).
   */
  async messages(newsletterId: string, page: PageRequest): Promise<PageOf<NewsletterMessage>> {
    const info = await this.info({ newsletterId });
    const socket = this.ctx.socket();
    const count = page.offset + page.limit;
    // Baileys adds `since`/`after` only when given (its typings ask for numbers it does not need).
    const none = undefined as unknown as number;
    const reply = (await attempt(
      () => socket.newsletterFetchMessages(newsletterId, count, none, none),
      this.text(`newsletter ${newsletterId}`, 'read'),
    )) as BinaryNode;
    const posts = postsOf(newsletterId, reply, info.role === 'owner');
    return pageOf(posts, page);
  }

  /** Posts as the owner (or an admin); the server's ack names the post's server id. */
  async send(newsletterId: string, text: string): Promise<SentMessage & { serverId: number }> {
    const info = await this.info({ newsletterId });
    if (info.role !== 'owner') throw errors.forbidden(`only the owner and admins of newsletter ${newsletterId} can post in it`);
    const socket = this.ctx.socket();
    const acks = new Map<string, BinaryNode>();
    let waiting: { id: string; resolve: (node: BinaryNode) => void } | undefined;
    const onAck = (node: BinaryNode) => {
      const id = node.attrs.id;
      if (!id || node.attrs.from !== newsletterId) return;
      if (waiting?.id === id) waiting.resolve(node);
      else acks.set(id, node);
    };
    socket.ws.on('CB:ack,class:message', onAck);
    try {
      const sent = await this.ctx.send({ kind: 'text', to: newsletterId, text, linkPreview: false });
      const ack =
        acks.get(sent.key.id) ??
        (await new Promise<BinaryNode | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(undefined), this.timeoutMs);
          waiting = { id: sent.key.id, resolve: (node) => (clearTimeout(timer), resolve(node)) };
        }));
      if (ack?.attrs.error) {
        const code = Number(ack.attrs.error);
        throw (
          refusalFor(code, ` (WhatsApp: error ${code})`, this.text(`newsletter ${newsletterId}`, 'post in')) ??
          errors.networkError(`WhatsApp refused the post (error ${code})`)
        );
      }
      const serverId = Number(ack?.attrs.server_id);
      if (!Number.isInteger(serverId) || serverId <= 0) {
        throw errors.networkError(
          `WhatsApp took post ${sent.key.id} but did not confirm it with a server id; check the newsletter's messages`,
        );
      }
      return { ...sent, serverId };
    } finally {
      socket.ws.off('CB:ack,class:message', onAck);
    }
  }

  // --- helpers ---

  /** A GraphQL query as Baileys' executeWMexQuery sends it; the data at `path`, or the mapped error. */
  private async mex<T>(variables: Record<string, unknown>, queryId: string, path: string, what: string): Promise<T> {
    const socket = this.ctx.socket();
    const text = this.text(what, 'create');
    const reply = await attempt(
      () =>
        socket.query({
          tag: 'iq',
          attrs: { id: socket.generateMessageTag(), type: 'get', to: S_WHATSAPP_NET, xmlns: 'w:mex' },
          content: [{ tag: 'query', attrs: { query_id: queryId }, content: Buffer.from(JSON.stringify({ variables }), 'utf-8') }],
        }),
      text,
    );
    const content = getBinaryNodeChild(reply, 'result')?.content;
    const body =
      content instanceof Uint8Array || typeof content === 'string'
        ? (JSON.parse(Buffer.from(content).toString('utf-8')) as {
            data?: Record<string, unknown>;
            errors?: { message?: string; extensions?: { error_code?: number } }[];
          })
        : undefined;
    const failure = body?.errors?.[0];
    if (failure) {
      const detail = ` (WhatsApp: ${failure.message ?? 'error'})`;
      throw refusalFor(failure.extensions?.error_code, detail, text) ?? errors.networkError(`WhatsApp refused the request${detail}`);
    }
    const data = body?.data?.[path];
    if (!data) throw errors.networkError(`WhatsApp answered the ${what} query without data`);
    return data as T;
  }

  private text(what: string, action: string): { notFound: string; refused: string } {
    return { notFound: what, refused: `not allowed to ${action} ${what}` };
  }
}
