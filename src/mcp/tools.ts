/**
 * The MCP tools. Each input schema is the REST route's own TypeBox schema where a tool maps to one
 * route (so the model sees exactly what the API validates), and each tool acts through the REST
 * route in process (rest.ts). With the admin key (or a web user's token), instance tools take an
 * extra `instanceId`. One-route tools are rows of routeTool/sendTool; the others say their routes.
 */
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { Type, type TObject, type TSchema } from 'typebox';
import { ChatQuery, ListQuery, SearchQuery } from '../chats/schema.js';
import { GroupQuery } from '../groups/schema.js';
import { ChatId, MessageId, PagingQuery } from '../http/schemas.js';
import { PERSON_ADDRESS_PATTERN } from '../network/addressing.js';
import { CreateBody, PairBody } from '../instances/schema.js';
import { FindQuery, PresenceBody, ReactBody, ReadBody } from '../messages/schema.js';
import { SendContactBody, SendLocationBody, SendMediaBody, SendPollBody, SendTextBody } from '../outgoing/schema.js';
import { chatJid, lineOf, ok, okJson, show } from './format.js';
import type { Caller, RestCall } from './rest.js';

export interface ToolContext {
  caller: Caller;
  /** The instance the tool acts on (the caller's own, or the `instanceId` argument of an admin). */
  instanceId: string | undefined;
  /** Calls a REST route as the caller; `admin` routes with its admin credential. Throws RestFailure on 4xx/5xx. */
  rest(call: RestCall, options?: { admin?: boolean }): Promise<unknown>;
  /** Resolves with the next incoming MESSAGE event data of the instance (and chat), or undefined at the deadline. */
  nextMessage(
    instanceId: string,
    chat: string | undefined,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<Record<string, unknown> | undefined>;
  signal: AbortSignal;
  /** A progress notification, when the client asked for them (a `progressToken`); resets its request timeout. */
  progress(progress: number, total: number, message: string): void;
  waitMaxSeconds: number;
  /** Media larger than this is linked (resource_link), not embedded. */
  embedMaxBytes: number;
}

/** What a tool does to the world; it gives the tool its annotations and decides who may call it. */
export type Effect = 'read' | 'send' | 'set' | 'create';

export const ANNOTATIONS: Record<Effect, ToolAnnotations> = {
  read: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  /** Sends reach other people: not idempotent (a retry sends twice), not destructive. */
  send: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  /** State changes that converge (mark read, react, typing, connect). */
  set: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  /** Something new inside the gateway (an instance). */
  create: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
};

/** A REST route under /api/v1 as Fastify names it: `GET /chat/list`, `GET /message/download/:messageId/base64`. */
type Route = `${'GET' | 'POST'} /${string}`;

export interface ToolDefinition {
  name: string;
  title: string;
  /** One line, written for a model. */
  description: string;
  input: TObject;
  effect: Effect;
  /** The REST routes it calls: a key that one of them refuses (a failover-group token) is not given the tool. */
  routes: Route[];
  /** Only for the admin key and users; acts on no particular instance. */
  adminOnly?: boolean;
  /** Gives what links a phone to the instance (the QR): owners and operators only. */
  linksPhone?: boolean;
  // The arguments were validated against `input` before the call.
  run(args: any, context: ToolContext): Promise<CallToolResult>;
}

type Json = Record<string, unknown>;
type Page = { items: Json[]; total: number; offset: number; limit: number };

/** A LID or phone JID (digits alone are searched as part of a number). */
const PERSON_ADDRESS = new RegExp(PERSON_ADDRESS_PATTERN);

const get = (path: string, query?: RestCall['query']): RestCall => ({ method: 'GET', path, ...(query ? { query } : {}) });
const post = (path: string, body: unknown): RestCall => ({ method: 'POST', path, body });

/** The phone number <-> LID pair of one address, through POST /user/resolve. */
async function resolved(id: string, context: ToolContext): Promise<{ jid: string | null; number: string | null; lid: string | null }> {
  const answer = (await context.rest(post('/user/resolve', { ids: [id] }))) as {
    items: { jid: string | null; number: string | null; lid: string | null }[];
  };
  return answer.items[0] ?? { jid: null, number: null, lid: null };
}

function pageText(page: Page, what: string, line: (item: Json) => string): string {
  const shown = page.items.length === 0 ? `No ${what}.` : page.items.map(line).join('\n');
  const more =
    page.offset + page.items.length < page.total ? `\n(${page.total} in all; next offset ${page.offset + page.items.length})` : '';
  return `${shown}${more}`;
}

function chatLine(chat: Json): string {
  const unread = typeof chat.unreadCount === 'number' && chat.unreadCount > 0 ? ` · ${chat.unreadCount} unread` : '';
  const last = chat.lastMessage ? `\n    last: ${lineOf(chat.lastMessage)}` : '';
  return `- ${show(chat.name ?? chat.chatId)} [${show(chat.chatId)}] (${show(chat.kind)})${unread}${last}`;
}

/** A send's answer: status, recipient and message id; its JSON names the instance that sent it (a group's serving member). */
const sentAs =
  (what: string) =>
  (reply: Json): CallToolResult => {
    const key = (reply.key ?? {}) as Json;
    return okJson(reply, `${what} ${show(reply.status ?? 'SENT')} to ${show(key.remoteJid)}, id ${show(key.id)}.`);
  };

/** A page of a list route, one line an item. */
const listed =
  (what: string, line: (item: Json) => string) =>
  (page: Page): CallToolResult =>
    ok(pageText(page, what, line), page);

/** A small answer as its JSON behind a line that says what happened. */
const told =
  (lead: (reply: Json) => string) =>
  (reply: Json): CallToolResult =>
    okJson(reply, lead(reply));

/**
 * A tool that is one REST route: its arguments are the route's query (GET) or body (POST), checked
 * against the route's own schema; `answer` turns the route's answer into the tool result.
 */
function routeTool(
  spec: Omit<ToolDefinition, 'routes' | 'run'> & { route: Route; answer: (reply: any) => CallToolResult },
): ToolDefinition {
  const { route, answer, ...tool } = spec;
  const [method, path] = route.split(' ') as ['GET' | 'POST', string];
  return {
    ...tool,
    routes: [route],
    async run(args, context) {
      const call = method === 'GET' ? get(path, args) : post(path, args);
      return answer(await context.rest(call, { admin: tool.adminOnly === true }));
    },
  };
}

/** A send route: it answers the sent message. */
const sendTool = (name: string, title: string, description: string, path: `/${string}`, input: TObject, what: string) =>
  routeTool({ name, title, description, input, effect: 'send', route: `POST ${path}`, answer: sentAs(what) });

const NoArguments = Type.Object({}, { additionalProperties: false });

/** How often a blocked wait_for_message reports progress. */
const HEARTBEAT_MS = 5000;

const Limit = (fallback: number, max: number, description: string) =>
  Type.Integer({ minimum: 1, maximum: max, default: fallback, description });

export const TOOLS: ToolDefinition[] = [
  routeTool({
    name: 'list_chats',
    title: 'List chats',
    description: 'List the WhatsApp chats of the instance, most recent first, with unread counts and the last message.',
    input: ListQuery,
    effect: 'read',
    route: 'GET /chat/list',
    answer: listed('chats', chatLine),
  }),
  routeTool({
    name: 'search_chats',
    title: 'Search chats',
    description: 'Find chats whose name, number or message text contains the query (case-insensitive).',
    input: SearchQuery,
    effect: 'read',
    route: 'GET /chat/search',
    answer: listed('chats found', chatLine),
  }),
  {
    name: 'get_chat',
    title: 'Read a chat',
    description: 'Read one chat and its recent messages; page back in time with the `before` and `skip` of the previous answer.',
    input: Type.Object(
      {
        chatId: ChatQuery.properties.chatId,
        limit: Limit(20, 100, 'How many messages (1 to 100, default 20).'),
        before: Type.Optional(
          Type.Integer({
            minimum: 0,
            description: 'Only messages at or before this time (Unix seconds): `next.before` of the previous answer.',
          }),
        ),
        skip: Type.Integer({
          minimum: 0,
          maximum: 10_000,
          default: 0,
          description: 'Messages at the `before` second already seen: `next.skip` of the previous answer.',
        }),
      },
      { additionalProperties: false },
    ),
    effect: 'read',
    routes: ['GET /chat/info', 'GET /message/find'],
    async run(args: { chatId: string; limit: number; before?: number; skip: number }, context) {
      const chat = (await context.rest(get('/chat/info', { chatId: args.chatId }))) as Json;
      const query = {
        chatId: args.chatId,
        limit: args.limit,
        ...(args.before !== undefined ? { until: args.before, offset: args.skip } : {}),
      };
      const page = (await context.rest(get('/message/find', query))) as Page;
      // The cursor is a second plus how many of that second were seen: several messages share a second.
      const oldest = page.items.at(-1)?.messageTimestamp;
      let next: { before: number; skip: number } | null = null;
      if (page.items.length === args.limit && typeof oldest === 'number') {
        const sameSecond = page.items.filter((m) => m.messageTimestamp === oldest).length;
        next = { before: oldest, skip: sameSecond + (oldest === args.before ? args.skip : 0) };
      }
      const lines = page.items.map(lineOf).reverse().join('\n');
      const more = next ? `\n(older: before=${next.before}, skip=${next.skip})` : '';
      return ok(`${chatLine({ ...chat, lastMessage: null })}\n${lines || 'No messages.'}${more}`, {
        chat,
        messages: page.items,
        total: page.total,
        next,
      });
    },
  },
  {
    name: 'get_message_context',
    title: 'Read around a message',
    description: 'Read a message with the messages just before and after it in its chat, oldest first.',
    input: Type.Object(
      {
        chatId: ChatId,
        messageId: MessageId,
        before: Type.Integer({ minimum: 0, maximum: 50, default: 5, description: 'Messages before it (0 to 50, default 5).' }),
        after: Type.Integer({ minimum: 0, maximum: 50, default: 5, description: 'Messages after it (0 to 50, default 5).' }),
      },
      { additionalProperties: false },
    ),
    effect: 'read',
    routes: ['GET /message/find'],
    async run(args: { chatId: string; messageId: string; before: number; after: number }, context) {
      const found = (await context.rest(get('/message/find', { chatId: args.chatId, messageId: args.messageId, limit: 1 }))) as Page;
      const target = found.items[0];
      if (!target) return toolNotFound(`message ${args.messageId} not found in chat ${args.chatId}`);
      const at = Number(target.messageTimestamp);
      // The store lists newest first; messages of the same second as the target sit on both sides
      // of it in that listing, so the listing up to `at` gives the earlier ones and the same-second later ones.
      const idOf = (m: Json) => show((m.key as Json).id);
      const upTo = (await context.rest(
        get('/message/find', { chatId: args.chatId, until: at, limit: Math.min(500, args.before + 100) }),
      )) as Page;
      const index = upTo.items.findIndex((m) => idOf(m) === args.messageId);
      const before = upTo.items.slice(index + 1, index + 1 + args.before);
      let after: Json[] = [];
      if (args.after > 0) {
        const total = ((await context.rest(get('/message/find', { chatId: args.chatId, since: at + 1, limit: 1 }))) as Page).total;
        const later =
          total === 0
            ? []
            : (
                (await context.rest(
                  get('/message/find', { chatId: args.chatId, since: at + 1, offset: Math.max(0, total - args.after), limit: args.after }),
                )) as Page
              ).items;
        after = [...later, ...upTo.items.slice(0, Math.max(0, index))].slice(-args.after);
      }
      const messages = [...before.reverse(), target, ...after.reverse()];
      const text = messages.map((m) => `${m === target ? '>> ' : '   '}${lineOf(m)}`).join('\n');
      return ok(text, { message: target, messages });
    },
  },
  routeTool({
    name: 'find_messages',
    title: 'Find messages',
    description: 'Search stored messages by text, chat, direction and time range (Unix seconds), newest first.',
    input: FindQuery,
    effect: 'read',
    route: 'GET /message/find',
    answer: listed('messages found', (m) => `- ${show((m.key as Json).remoteJid)}  ${lineOf(m)}`),
  }),
  {
    name: 'search_contacts',
    title: 'Search contacts',
    description:
      'Find contacts by part of their name or number, or by JID (phone numbers are given instead of `@lid` ids wherever the gateway knows them).',
    input: Type.Object(
      {
        query: Type.String({
          minLength: 1,
          maxLength: 128,
          description: 'Part of a name, digits of a number, or a JID such as `123456789@lid`.',
        }),
        limit: Limit(20, 100, 'Most contacts to return (default 20).'),
      },
      { additionalProperties: false },
    ),
    effect: 'read',
    routes: ['GET /user/contacts', 'POST /user/resolve'],
    async run(args: { query: string; limit: number }, context) {
      const query = args.query.trim().toLowerCase();
      const digits = query.replace(/[^0-9]/g, '');
      // An address (a LID or a phone JID) is resolved first: contacts are listed by phone JID.
      const person = query.includes('@') && PERSON_ADDRESS.test(query) ? await resolved(query, context) : undefined;
      const target = person ? (person.jid ?? person.lid) : query;
      const matches: Json[] = [];
      // The contact list has no server-side search: scan it page by page (bounded).
      for (let offset = 0; offset < 5000 && matches.length < args.limit; offset += 500) {
        const page = (await context.rest(get('/user/contacts', { offset, limit: 500 }))) as Page;
        for (const contact of page.items) {
          const name = [contact.name, contact.pushName, contact.verifiedName]
            .filter((v) => typeof v === 'string')
            .join(' ')
            .toLowerCase();
          const jid = show(contact.jid).toLowerCase();
          const hit = query.includes('@')
            ? jid === target
            : name.includes(query) || (digits.length >= 3 && show(contact.number).includes(digits));
          if (hit) matches.push(person ? { ...contact, lid: person.lid } : contact);
          if (matches.length >= args.limit) break;
        }
        if (offset + page.items.length >= page.total) break;
      }
      // A person who is not a contact is still worth an answer when the address resolved.
      if (matches.length === 0 && person?.jid)
        matches.push({ jid: person.jid, number: person.number, lid: person.lid, name: null, contact: false });
      const unresolved = person && !person.jid ? ' WhatsApp has not revealed the phone number behind this @lid id to this account.' : '';
      const text =
        matches.length === 0
          ? `No contact matches "${args.query}".${unresolved}`
          : matches
              .map(
                (c) =>
                  `- ${show(c.name ?? c.pushName ?? '(no name)')}: ${show(c.number)} [${show(c.jid)}${c.lid ? `, ${show(c.lid)}` : ''}]${c.contact === false ? ' (not a contact)' : ''}`,
              )
              .join('\n');
      return ok(text, { items: matches });
    },
  },
  sendTool(
    'send_text',
    'Send a text',
    'Send a text message to a number or group; set `quoted.id` to reply to a message.',
    '/send/text',
    SendTextBody,
    'Text',
  ),
  sendTool(
    'send_media',
    'Send media',
    'Send an image, video, audio (or voice note) or document given by https URL or base64, with an optional caption.',
    '/send/media',
    SendMediaBody,
    'Media',
  ),
  sendTool(
    'send_location',
    'Send a location',
    'Send a map location (latitude, longitude, optional place name and address).',
    '/send/location',
    SendLocationBody,
    'Location',
  ),
  sendTool(
    'send_contact',
    'Send contact cards',
    'Send one or more contact cards (name and phone numbers).',
    '/send/contact',
    SendContactBody,
    'Contact card',
  ),
  sendTool('send_poll', 'Send a poll', 'Send a poll with a question and 2 to 12 options.', '/send/poll', SendPollBody, 'Poll'),
  routeTool({
    name: 'react',
    title: 'React to a message',
    description: 'React to a message with one emoji; an empty emoji removes the reaction.',
    input: ReactBody,
    effect: 'set',
    route: 'POST /message/react',
    answer: sentAs('Reaction'),
  }),
  routeTool({
    name: 'mark_read',
    title: 'Mark messages read',
    description: 'Mark received messages of a chat as read (blue ticks, as the privacy settings allow).',
    input: ReadBody,
    effect: 'set',
    route: 'POST /message/read',
    answer: told(() => 'Marked read.'),
  }),
  routeTool({
    name: 'send_typing',
    title: 'Show typing',
    description: 'Show "typing…" or "recording audio…" in a chat (or stop it with `paused`), optionally for a fixed time.',
    input: PresenceBody,
    effect: 'set',
    route: 'POST /message/presence',
    answer: told(() => 'Presence sent.'),
  }),
  routeTool({
    name: 'list_groups',
    title: 'List groups',
    description: 'List the groups the instance is in, with subjects and participants.',
    input: PagingQuery,
    effect: 'read',
    route: 'GET /group/list',
    answer: listed('groups', (g) => `- ${show(g.subject)} [${show(g.groupId)}] · ${show(g.size)} participants`),
  }),
  routeTool({
    name: 'get_group',
    title: 'Group info',
    description: 'Read a group: subject, description, settings and participants with their roles.',
    input: GroupQuery,
    effect: 'read',
    route: 'GET /group/info',
    answer: (group: Json) => {
      const participants = (group.participants as Json[]).map((p) => `- ${show(p.number)} (${show(p.role)})`).join('\n');
      return ok(`${show(group.subject)} [${show(group.groupId)}]\n${show(group.description ?? '')}\nParticipants:\n${participants}`, group);
    },
  }),
  {
    name: 'download_media',
    title: 'Download media',
    description: 'Get the image, audio, video or document of a message as MCP content (images and audio inline).',
    input: Type.Object({ messageId: MessageId }, { additionalProperties: false }),
    effect: 'read',
    routes: ['GET /message/find', 'GET /message/download/:messageId/base64'],
    async run(args: { messageId: string }, context) {
      const found = (await context.rest(get('/message/find', { messageId: args.messageId, limit: 1 }))) as Page;
      const media = found.items[0]?.media as Json | undefined;
      if (!media) return toolNotFound(`message ${args.messageId} has no stored media`);
      const mimetype = show(media.mimetype);
      const info = {
        messageId: args.messageId,
        mimetype,
        fileLength: media.fileLength,
        fileName: media.fileName ?? null,
        sha256: media.sha256,
      };
      const uri = `waygate://instances/${context.instanceId ?? ''}/media/${encodeURIComponent(args.messageId)}`;
      if (Number(media.fileLength) > context.embedMaxBytes) {
        return {
          content: [
            {
              type: 'text',
              text: `${mimetype}, ${show(media.fileLength)} bytes: too large to embed; GET ${show(media.downloadUrl)} with the instance token.`,
            },
            { type: 'resource_link', uri, name: show(media.fileName ?? args.messageId), mimeType: mimetype },
          ],
          structuredContent: { ...info, downloadUrl: media.downloadUrl },
        };
      }
      const file = (await context.rest(get(`/message/download/${encodeURIComponent(args.messageId)}/base64`))) as Json;
      const data = show(file.base64);
      const lead = {
        type: 'text' as const,
        text: `${mimetype}, ${show(file.fileLength)} bytes${file.fileName ? `, ${show(file.fileName)}` : ''}.`,
      };
      const body = mimetype.startsWith('image/')
        ? { type: 'image' as const, data, mimeType: mimetype }
        : mimetype.startsWith('audio/')
          ? { type: 'audio' as const, data, mimeType: mimetype }
          : { type: 'resource' as const, resource: { uri, mimeType: mimetype, blob: data } };
      return { content: [lead, body], structuredContent: info };
    },
  },
  {
    name: 'wait_for_message',
    title: 'Wait for a message',
    description:
      'Wait (bounded) for the next message someone sends to the instance, in one chat or any; returns at once if some came after `afterMessageId`.',
    input: Type.Object(
      {
        chatId: Type.Optional(ChatId),
        timeoutSeconds: Type.Integer({
          minimum: 1,
          maximum: 3600,
          default: 30,
          description: 'Longest wait in seconds (capped by MCP_WAIT_MAX_SECONDS; default 30).',
        }),
        afterMessageId: Type.Optional({
          ...MessageId,
          description:
            'Return at once the messages received after this one, if any: pass the id of the message you just sent or last read, so a reply that came in between is not missed.',
        }),
      },
      { additionalProperties: false },
    ),
    effect: 'read',
    routes: ['GET /message/find'],
    async run(args: { chatId?: string; timeoutSeconds: number; afterMessageId?: string }, context) {
      const instanceId = context.instanceId;
      if (!instanceId) return toolNotFound('no instance to wait on');
      const chat = args.chatId ? chatJid(args.chatId) : undefined;
      const timeoutMs = Math.min(args.timeoutSeconds, context.waitMaxSeconds) * 1000;
      // Listen first, then look at the store, so a message arriving in between is not missed.
      const controller = new AbortController();
      const abort = () => controller.abort();
      context.signal.addEventListener('abort', abort, { once: true });
      // Clients time requests out (the SDK after 60 s) unless progress arrives.
      const started = Date.now();
      const beat = setInterval(
        () => context.progress(Math.round((Date.now() - started) / 1000), timeoutMs / 1000, 'waiting for a message'),
        HEARTBEAT_MS,
      );
      try {
        const next = context.nextMessage(instanceId, chat, timeoutMs, controller.signal);
        if (args.afterMessageId !== undefined) {
          const inChat = args.chatId ? { chatId: args.chatId } : {};
          const found = (await context.rest(get('/message/find', { ...inChat, messageId: args.afterMessageId, limit: 1 }))) as Page;
          const mark = found.items[0];
          if (!mark) return toolNotFound(`message ${args.afterMessageId} not found${args.chatId ? ` in chat ${args.chatId}` : ''}`);
          // Newest first: what is listed before the mark (same second included) came after it.
          const listing = (await context.rest(
            get('/message/find', { ...inChat, since: Number(mark.messageTimestamp), limit: 100 }),
          )) as Page;
          const index = listing.items.findIndex((m) => (m.key as Json).id === args.afterMessageId);
          const newer = (index === -1 ? listing.items : listing.items.slice(0, index)).filter((m) => (m.key as Json).fromMe !== true);
          if (newer.length > 0) {
            const messages = newer.reverse();
            return ok(messages.map(lineOf).join('\n'), { messages, timedOut: false });
          }
        }
        const message = await next;
        if (!message) return ok(`No message within ${timeoutMs / 1000} s.`, { messages: [], timedOut: true });
        return ok(lineOf(message), { messages: [message], timedOut: false });
      } finally {
        clearInterval(beat);
        context.signal.removeEventListener('abort', abort);
        controller.abort();
      }
    },
  },
  routeTool({
    name: 'get_instance_status',
    title: 'Instance status',
    description: 'Read the connection status and phone number of the instance.',
    input: NoArguments,
    effect: 'read',
    route: 'GET /instance/status',
    answer: told((status) => `Instance is ${show(status.status)}${status.number ? ` as ${show(status.number)}` : ''}.`),
  }),
  {
    name: 'connect_instance',
    title: 'Connect the instance',
    description: 'Start connecting the instance to WhatsApp; then link it with get_qr (scan) or pair_with_code.',
    input: NoArguments,
    effect: 'set',
    routes: ['POST /instance/connect'],
    async run(_args, context) {
      const reply = (await context.rest(post('/instance/connect', undefined))) as Json;
      const { qrcode: _qr, ...rest } = reply;
      return okJson(rest, `Status ${show(reply.status)}.${reply.qrcode ? ' A QR code is ready: call get_qr.' : ''}`);
    },
  },
  {
    name: 'get_qr',
    title: 'QR code',
    description: 'Get the current QR code to link the instance (scan it in WhatsApp > Linked devices) as an image.',
    input: NoArguments,
    effect: 'read',
    routes: ['GET /instance/qr'],
    // Scanning it links a phone to the instance: not for read-only users, though it changes nothing.
    linksPhone: true,
    async run(_args, context) {
      const qr = (await context.rest(get('/instance/qr'))) as Json;
      return {
        content: [
          { type: 'text', text: `QR attempt ${show(qr.attempt)}, valid until ${show(qr.expiresAt)}.` },
          { type: 'image', data: show(qr.base64), mimeType: 'image/png' },
        ],
        structuredContent: { code: qr.code, attempt: qr.attempt, expiresAt: qr.expiresAt },
      };
    },
  },
  routeTool({
    name: 'pair_with_code',
    title: 'Pairing code',
    description:
      'Get an 8-digit code to link the instance by phone number instead of a QR (WhatsApp > Linked devices > Link with phone number).',
    input: PairBody,
    effect: 'send',
    route: 'POST /instance/pair',
    answer: told((reply) => `Pairing code ${show(reply.pairingCode)} for ${show(reply.number)}.`),
  }),
  // ---- admin key and users only ----
  routeTool({
    name: 'list_instances',
    title: 'List instances',
    description: 'List every instance of the gateway with its status and number (admin).',
    input: PagingQuery,
    effect: 'read',
    adminOnly: true,
    route: 'GET /instance/all',
    answer: listed(
      'instances',
      (i) =>
        `- ${show(i.instanceName)} [${show(i.instanceId)}] ${show(i.network)} ${show(i.status)}${i.number ? ` ${show(i.number)}` : ''}`,
    ),
  }),
  routeTool({
    name: 'create_instance',
    title: 'Create an instance',
    description: 'Create a new instance (one WhatsApp number, or a sandbox one); the answer holds its token (admin).',
    input: CreateBody,
    effect: 'create',
    adminOnly: true,
    route: 'POST /instance/create',
    answer: told((reply) => `Created ${show(reply.instanceName)} [${show(reply.instanceId)}]; connect it with connect_instance.`),
  }),
];

function toolNotFound(message: string): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: `${message} (not_found, HTTP 404)` }],
    structuredContent: { error: message, code: 'not_found', status: 404 },
  };
}

/** The `instanceId` argument the admin key adds to every instance tool. */
export const InstanceIdArgument: TSchema = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'The instance to act on (admin key only).',
});
