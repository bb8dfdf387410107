/**
 * MCP resources (a chat list and each chat's messages, per instance; stored media) and prompts
 * (summarise a chat, draft a reply). Read through the REST routes like the tools.
 */
import type { GetPromptResult, Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import { chatJid, lineOf } from './format.js';
import type { Caller, RestCall } from './rest.js';

type Rest = (call: RestCall, options?: { admin?: boolean }) => Promise<unknown>;
type Json = Record<string, unknown>;
type Page = { items: Json[]; total: number };

export type ResourceTarget =
  | { kind: 'chats'; instanceId: string }
  | { kind: 'messages'; instanceId: string; chat: string; chatId: string }
  | { kind: 'media'; instanceId: string; messageId: string };

const BASE = 'waygate://instances/';

export const chatsUri = (instanceId: string) => `${BASE}${encodeURIComponent(instanceId)}/chats`;
export const messagesUri = (instanceId: string, chatId: string) =>
  `${BASE}${encodeURIComponent(instanceId)}/chats/${encodeURIComponent(chatId)}/messages`;

export const RESOURCE_TEMPLATES: ResourceTemplate[] = [
  {
    uriTemplate: `${BASE}{instanceId}/chats`,
    name: 'chats',
    title: 'Chats of an instance',
    description: "The instance's chats, most recent first (JSON). Subscribe to be told when any message arrives or is sent.",
    mimeType: 'application/json',
  },
  {
    uriTemplate: `${BASE}{instanceId}/chats/{chatId}/messages`,
    name: 'chat-messages',
    title: 'Messages of a chat',
    description:
      'The latest 50 messages of a chat (chatId: a number or JID), oldest first, one per line. Subscribe to be told when one arrives.',
    mimeType: 'text/plain',
  },
  {
    uriTemplate: `${BASE}{instanceId}/media/{messageId}`,
    name: 'media',
    title: 'Media of a message',
    description: "The bytes of a message's image, audio, video or document.",
  },
];

export function parseResourceUri(uri: string): ResourceTarget | undefined {
  if (!uri.startsWith(BASE)) return undefined;
  const parts = uri.slice(BASE.length).split('/');
  let decoded: string[];
  try {
    decoded = parts.map((part) => decodeURIComponent(part));
  } catch {
    return undefined;
  }
  const [instanceId, kind, id, tail] = decoded;
  if (!instanceId) return undefined;
  if (parts.length === 2 && kind === 'chats') return { kind: 'chats', instanceId };
  if (parts.length === 4 && kind === 'chats' && id && tail === 'messages')
    return { kind: 'messages', instanceId, chatId: id, chat: chatJid(id) };
  if (parts.length === 3 && kind === 'media' && id) return { kind: 'media', instanceId, messageId: id };
  return undefined;
}

/** resources/list: an instance key sees its chat list and its 50 latest chats; the admin key each instance's chat list. */
export async function resourceList(caller: Caller, ownInstance: string | undefined, rest: Rest): Promise<Resource[]> {
  if (caller.kind === 'admin') {
    const instances = (await rest({ method: 'GET', path: '/instance/all', query: { limit: 100 } }, { admin: true })) as Page;
    return instances.items.map((i) => ({
      uri: chatsUri(String(i.instanceId)),
      name: `chats of ${String(i.instanceName)}`,
      mimeType: 'application/json',
    }));
  }
  const instanceId = ownInstance ?? '';
  const chats = (await rest({ method: 'GET', path: '/chat/list', query: { limit: 50 } })) as Page;
  return [
    { uri: chatsUri(instanceId), name: 'chats', title: 'Chats', mimeType: 'application/json' },
    ...chats.items.map((chat) => ({
      uri: messagesUri(instanceId, String(chat.chatId)),
      name: `messages of ${String(chat.name ?? chat.chatId)}`,
      mimeType: 'text/plain',
    })),
  ];
}

export async function readResource(uri: string, target: ResourceTarget, rest: Rest) {
  switch (target.kind) {
    case 'chats': {
      const chats = await rest({ method: 'GET', path: '/chat/list', query: { limit: 100 } });
      return [{ uri, mimeType: 'application/json', text: JSON.stringify(chats) }];
    }
    case 'messages': {
      const page = (await rest({ method: 'GET', path: '/message/find', query: { chatId: target.chatId, limit: 50 } })) as Page;
      return [{ uri, mimeType: 'text/plain', text: page.items.map(lineOf).reverse().join('\n') }];
    }
    case 'media': {
      const file = (await rest({ method: 'GET', path: `/message/download/${encodeURIComponent(target.messageId)}/base64` })) as Json;
      return [{ uri, mimeType: String(file.mimetype), blob: String(file.base64) }];
    }
  }
}

export const PROMPTS = [
  {
    name: 'summarize_chat',
    title: 'Summarise a chat',
    description: 'Summarise the recent messages of a chat: topics, decisions, open questions.',
    arguments: [{ name: 'chatId', description: 'The chat: a number with country code or a JID.', required: true }],
  },
  {
    name: 'draft_reply',
    title: 'Draft a reply',
    description: 'Draft a reply to the latest messages of a chat, for the user to approve before it is sent.',
    arguments: [
      { name: 'chatId', description: 'The chat: a number with country code or a JID.', required: true },
      { name: 'goal', description: 'What the reply should achieve or its tone (optional).', required: false },
    ],
  },
];

/** A prompt asked for with arguments it cannot take (the MCP server answers InvalidParams). */
export class InvalidPromptArguments extends Error {}

export async function promptMessages(name: string, args: Record<string, string>, rest: Rest): Promise<GetPromptResult> {
  const chatId = args.chatId;
  if (!chatId) throw new InvalidPromptArguments('chatId is required');
  const count = name === 'summarize_chat' ? 100 : name === 'draft_reply' ? 30 : 0;
  if (count === 0) throw new InvalidPromptArguments(`unknown prompt ${name}`);
  const page = (await rest({ method: 'GET', path: '/message/find', query: { chatId, limit: count } })) as Page;
  const transcript = page.items.map(lineOf).reverse().join('\n') || '(no messages)';
  const ask =
    name === 'summarize_chat'
      ? `Summarise this WhatsApp chat (${chatId}): the topics, any decisions, and questions still open. Lines marked "me" were sent by us.`
      : `Draft a reply to the latest messages of this WhatsApp chat (${chatId})${args.goal ? `; the reply should: ${args.goal}` : ''}. Lines marked "me" were sent by us. Show the draft only; send it with send_text once the user approves.`;
  return {
    description: `${name === 'summarize_chat' ? 'Summary' : 'Reply draft'} of ${chatId}`,
    messages: [{ role: 'user', content: { type: 'text', text: `${ask}\n\n${transcript}` } }],
  };
}
