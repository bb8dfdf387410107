/**
 * How messages look to a model: one readable line per message (time, sender, text or kind) in the
 * text content, the full REST shape in structuredContent.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

type Json = Record<string, unknown>;

function record(value: unknown): Json | undefined {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The readable text of a message in the network payload shape (text, caption, poll, location, ...). */
export function textOf(message: unknown): string {
  const m = record(message) ?? {};
  const text = str(m.conversation) ?? str(record(m.extendedTextMessage)?.text);
  if (text) return text;
  for (const kind of ['imageMessage', 'videoMessage', 'documentMessage', 'audioMessage', 'stickerMessage'] as const) {
    const media = record(m[kind]);
    if (!media) continue;
    const label = kind.replace('Message', '');
    const caption = str(media.caption);
    const name = str(media.fileName);
    return `[${label}${name ? ` ${name}` : ''}]${caption ? ` ${caption}` : ''}`;
  }
  const location = record(m.locationMessage);
  if (location)
    return `[location ${String(location.degreesLatitude)},${String(location.degreesLongitude)}${str(location.name) ? ` ${String(location.name)}` : ''}]`;
  const poll = record(m.pollCreationMessageV3) ?? record(m.pollCreationMessage);
  if (poll) {
    const options = Array.isArray(poll.options) ? poll.options.map((o) => str(record(o)?.optionName)).filter(Boolean) : [];
    return `[poll] ${String(poll.name)} (${options.join(' / ')})`;
  }
  const contact = record(m.contactMessage);
  if (contact) return `[contact] ${String(contact.displayName)}`;
  if (record(m.contactsArrayMessage)) return '[contacts]';
  const reaction = record(m.reactionMessage);
  if (reaction) return `[reaction ${String(reaction.text)}]`;
  const kind = Object.keys(m)[0];
  return kind ? `[${kind}]` : '[empty]';
}

/** `2026-11-23 20:01:05Z  me: hello` / `... Alice (5511999990000): hi` */
export function lineOf(message: unknown): string {
  const m = record(message) ?? {};
  const key = record(m.key) ?? {};
  const seconds = typeof m.messageTimestamp === 'number' ? m.messageTimestamp : 0;
  const when = new Date(seconds * 1000)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  const author = key.fromMe === true ? 'me' : senderOf(m, key);
  const deleted = m.deleted === true ? ' (deleted)' : '';
  return `${when}  ${author}: ${textOf(m.message)}${deleted}  [id ${String(key.id)}]`;
}

function senderOf(m: Json, key: Json): string {
  const address = str(m.participant) ?? str(key.remoteJid) ?? '?';
  const number = address.split('@')[0]?.split(':')[0] ?? address;
  const name = str(m.pushName);
  return name ? `${name} (${number})` : number;
}

/** A successful tool result: the text a model reads plus the data as structured content. */
export function ok(text: string, structured: Json): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: structured };
}

/** A successful result whose text is the JSON itself (small answers: ids, statuses). */
export function okJson(structured: Json, lead?: string): CallToolResult {
  const json = JSON.stringify(structured, null, 2);
  return ok(lead ? `${lead}\n${json}` : json, structured);
}

/** A tool error, as MCP wants it: a result with `isError`, the REST message and code. */
export function toolError(message: string, details: { code?: string; status?: number } = {}): CallToolResult {
  const tail = [details.code, details.status ? `HTTP ${details.status}` : undefined].filter(Boolean).join(', ');
  return {
    isError: true,
    content: [{ type: 'text', text: tail ? `${message} (${tail})` : message }],
    structuredContent: {
      error: message,
      ...(details.code ? { code: details.code } : {}),
      ...(details.status ? { status: details.status } : {}),
    },
  };
}

/** A chat as a person writes it (digits) or as the network does: the JID messages carry. */
export function chatJid(chatId: string): string {
  if (/^[0-9]{5,20}$/.test(chatId)) return `${chatId}@s.whatsapp.net`;
  // `5511...:7@s.whatsapp.net` names the person's chat.
  return chatId.replace(/^([0-9]+):[0-9]+@s\.whatsapp\.net$/, '$1@s.whatsapp.net');
}

/** A JSON value as text: strings as they are, other values as JSON (`null` for missing ones). */
export function show(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'null';
  return JSON.stringify(value);
}
