/**
 * Baileys events -> Waygate's canonical events, as pure functions. Payloads have the sandbox's shapes
 * (MESSAGE: key, pushName, message, messageTimestamp; READ_RECEIPT: key, receipt, readTimestamp; ...)
 * plus WhatsApp-only fields that are documented in docs/whatsapp.md:
 *   - people are shown by phone address whenever it is known; the hidden id travels beside it in
 *     `remoteJidLid` / `participantLid` (message keys) or `lid` (presence, calls, contacts, groups);
 *   - `message` is the WhatsApp protobuf as JSON (int64 as numbers, bytes as base64, enums as names).
 */
import {
  getContentType,
  normalizeMessageContent,
  proto,
  type BaileysEventMap,
  type Contact as WAContact,
  type GroupMetadata,
  type GroupParticipant as WAGroupParticipant,
  type WACallEvent,
  type WAMessage,
  type WAMessageKey,
  type WAMessageUpdate,
  type MessageUserReceiptUpdate,
} from 'baileys';
import type { CanonicalEvent, EventData, EventMedia, EventMessageKey } from '../port.js';
import type { ResolvedAddress } from './addresses.js';

export interface AddressBook {
  resolve(jid: string, alt?: string | null): ResolvedAddress;
}

export interface InboundContext {
  addresses: AddressBook;
  /** Milliseconds since the epoch. */
  now(): number;
}

type Json = Record<string, unknown>;

/** Messages of history sync per HISTORY_SYNC event, so one event stays a reasonable size. */
export const HISTORY_MESSAGES_PER_EVENT = 200;

type LongLike = { toNumber(): number } | { toString(): string };

export function toSeconds(value: number | LongLike | null | undefined): number {
  if (value === null || value === undefined) return 0;
  if (typeof value === 'number') return value;
  return 'toNumber' in value ? value.toNumber() : Number(value.toString());
}

/** The protobuf Message as JSON: what every MESSAGE and SEND_MESSAGE event carries in `message`. */
export function messageToJson(message: proto.IMessage): Json {
  const typed = message instanceof proto.Message ? message : proto.Message.fromObject(message);
  return proto.Message.toObject(typed, { longs: Number, enums: String, bytes: String, defaults: false, arrays: false, oneofs: false });
}

/** A message key as events show it. */
export function keyView(key: WAMessageKey, addresses: AddressBook): EventMessageKey {
  const chat = addresses.resolve(key.remoteJid ?? '', key.remoteJidAlt);
  const view: EventMessageKey = { remoteJid: chat.jid, fromMe: Boolean(key.fromMe), id: key.id ?? '' };
  if (chat.lid) view.remoteJidLid = chat.lid;
  if (key.participant) {
    const participant = addresses.resolve(key.participant, key.participantAlt);
    view.participant = participant.jid;
    if (participant.lid) view.participantLid = participant.lid;
  }
  return view;
}

/** The MESSAGE payload of one message (also used inside HISTORY_SYNC). */
export function messageData(message: WAMessage, addresses: AddressBook): EventData<'MESSAGE'> {
  return {
    key: keyView(message.key, addresses),
    pushName: message.pushName ?? '',
    message: message.message ? messageToJson(message.message) : {},
    messageTimestamp: toSeconds(message.messageTimestamp),
  };
}

const SHOWN_PROTOCOL_TYPES = new Set<number>([proto.Message.ProtocolMessage.Type.REVOKE, proto.Message.ProtocolMessage.Type.MESSAGE_EDIT]);

/**
 * Whether a message is something a user sent (text, media, reaction, poll vote, deletion, edit) rather
 * than protocol plumbing (key shares, history notifications, app-state sync) or a stub without content.
 */
export function isUserMessage(message: WAMessage): boolean {
  const content = normalizeMessageContent(message.message);
  const type = getContentType(content ?? undefined);
  if (!content || !type || type === 'messageContextInfo') return false;
  if (type === 'protocolMessage') {
    const protocolType = content.protocolMessage?.type;
    return protocolType !== null && protocolType !== undefined && SHOWN_PROTOCOL_TYPES.has(protocolType);
  }
  return true;
}

/**
 * `messages.upsert` -> MESSAGE for each message users would see. Messages this gateway sent itself
 * are skipped: they were reported as SEND_MESSAGE when sent. Poll votes are left to the session,
 * which decrypts them first (see pollVoteData).
 */
export function upsertEvents(
  upsert: BaileysEventMap['messages.upsert'],
  ctx: InboundContext,
  sentByGateway: (id: string) => boolean,
  mediaOf: (message: WAMessage) => EventMedia | undefined = () => undefined,
): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  for (const message of upsert.messages) {
    if (!isUserMessage(message)) continue;
    if (message.key.fromMe && message.key.id && sentByGateway(message.key.id)) continue;
    if (normalizeMessageContent(message.message)?.pollUpdateMessage) continue;
    const media = mediaOf(message);
    events.push({ type: 'MESSAGE', data: messageData(message, ctx.addresses), ...(media ? { media } : {}) });
  }
  return events;
}

/** The downloadable media inside a message (image, video, audio, document, sticker), if any. */
export function mediaContentOf(message: proto.IMessage | null | undefined): { mimetype: string; fileName?: string } | undefined {
  const content = normalizeMessageContent(message);
  const media =
    content?.imageMessage ?? content?.videoMessage ?? content?.audioMessage ?? content?.documentMessage ?? content?.stickerMessage;
  if (!media?.mediaKey || !(media.directPath || media.url)) return undefined;
  const fileName = content?.documentMessage?.fileName;
  return { mimetype: media.mimetype ?? 'application/octet-stream', ...(fileName ? { fileName } : {}) };
}

const STATUS = proto.WebMessageInfo.Status;

/**
 * `messages.update` -> delivery outcomes of our own messages: ERROR becomes SEND_MESSAGE with status
 * `FAILED` and the network's error code (the send had resolved; the network rejected it later),
 * DELIVERY_ACK / READ / PLAYED become READ_RECEIPT `delivered` / `read` / `played`.
 */
export function updateEvents(updates: WAMessageUpdate[], ctx: InboundContext): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  for (const { key, update } of updates) {
    if (!key.fromMe || update.status === null || update.status === undefined) continue;
    const view = keyView(key, ctx.addresses);
    const at = toSeconds(update.messageTimestamp) || Math.floor(ctx.now() / 1000);
    switch (update.status) {
      case STATUS.ERROR: {
        const params = (update.messageStubParameters ?? []) as (string | number | undefined)[];
        const code = params[0] === undefined ? null : String(params[0]);
        events.push({
          type: 'SEND_MESSAGE',
          data: {
            key: view,
            status: 'FAILED',
            error: { code, message: params[1] === undefined ? `rejected by the network (error ${code ?? 'unknown'})` : String(params[1]) },
            timestamp: at,
          },
        });
        break;
      }
      case STATUS.DELIVERY_ACK:
        events.push({ type: 'READ_RECEIPT', data: { key: view, receipt: 'delivered', deliveredTimestamp: at } });
        break;
      case STATUS.READ:
        events.push({ type: 'READ_RECEIPT', data: { key: view, receipt: 'read', readTimestamp: at } });
        break;
      case STATUS.PLAYED:
        events.push({ type: 'READ_RECEIPT', data: { key: view, receipt: 'played', readTimestamp: at, playedTimestamp: at } });
        break;
      case STATUS.PENDING:
      case STATUS.SERVER_ACK:
        // Already reported as SENT when sendMessage resolved.
        break;
    }
  }
  return events;
}

/** `message-receipt.update` (groups and status: one receipt per reader) -> READ_RECEIPT. */
export function receiptEvents(receipts: MessageUserReceiptUpdate[], ctx: InboundContext): CanonicalEvent[] {
  return receipts.map(({ key, receipt }) => {
    const reader = receipt.userJid ? ctx.addresses.resolve(receipt.userJid) : undefined;
    const played = toSeconds(receipt.playedTimestamp);
    const read = toSeconds(receipt.readTimestamp);
    const delivered = toSeconds(receipt.receiptTimestamp);
    const data: EventData<'READ_RECEIPT'> = { key: keyView(key, ctx.addresses), receipt: played ? 'played' : read ? 'read' : 'delivered' };
    if (read) data.readTimestamp = read;
    if (played) data.playedTimestamp = played;
    if (delivered) data.deliveredTimestamp = delivered;
    if (reader) {
      data.participant = reader.jid;
      if (reader.lid) data.participantLid = reader.lid;
    }
    return { type: 'READ_RECEIPT' as const, data };
  });
}

/** `presence.update` -> PRESENCE (online/offline) or CHAT_PRESENCE (typing, recording, paused). */
export function presenceEvents(update: BaileysEventMap['presence.update'], ctx: InboundContext): CanonicalEvent[] {
  const chat = ctx.addresses.resolve(update.id);
  const events: CanonicalEvent[] = [];
  for (const [participantJid, presence] of Object.entries(update.presences)) {
    const who = ctx.addresses.resolve(participantJid);
    const state = presence.lastKnownPresence;
    if (state === 'available' || state === 'unavailable') {
      const data: EventData<'PRESENCE'> = { id: who.jid, presence: state };
      if (who.lid) data.lid = who.lid;
      if (presence.lastSeen) data.lastSeen = presence.lastSeen;
      events.push({ type: 'PRESENCE', data });
    } else {
      const data: EventData<'CHAT_PRESENCE'> = { remoteJid: chat.jid, participant: who.jid, presence: state };
      if (chat.lid) data.remoteJidLid = chat.lid;
      if (who.lid) data.participantLid = who.lid;
      events.push({ type: 'CHAT_PRESENCE', data });
    }
  }
  return events;
}

/** `call` -> CALL, one per call state change (offer, ringing, accept, reject, timeout, terminate). */
export function callEvents(calls: WACallEvent[], ctx: InboundContext): CanonicalEvent[] {
  return calls.map((call) => {
    const from = ctx.addresses.resolve(call.from, call.callerPn);
    const data: EventData<'CALL'> = {
      id: call.id,
      from: from.jid,
      status: call.status,
      isVideo: Boolean(call.isVideo),
      isGroup: Boolean(call.isGroup),
      timestamp: Math.floor(call.date.getTime() / 1000),
      offline: call.offline,
    };
    if (from.lid) data.fromLid = from.lid;
    if (call.groupJid) data.groupJid = call.groupJid;
    return { type: 'CALL' as const, data };
  });
}

function contactData(contact: Partial<WAContact>, ctx: InboundContext): (Json & { id: string }) | undefined {
  if (!contact.id) return undefined;
  const who = ctx.addresses.resolve(contact.id, contact.phoneNumber ?? contact.lid);
  const data: Json & { id: string } = { id: who.jid };
  if (who.lid ?? contact.lid) data.lid = who.lid ?? contact.lid;
  for (const field of ['name', 'notify', 'verifiedName', 'status', 'imgUrl'] as const) {
    if (contact[field] !== undefined) data[field] = contact[field];
  }
  return data;
}

/** `contacts.upsert` / `contacts.update` -> CONTACT, one per contact. */
export function contactEvents(contacts: Partial<WAContact>[], ctx: InboundContext, action: 'upsert' | 'update'): CanonicalEvent[] {
  return contacts.flatMap((contact) => {
    const data = contactData(contact, ctx);
    return data ? [{ type: 'CONTACT' as const, data: { action, ...data } }] : [];
  });
}

function participantView(participant: WAGroupParticipant, ctx: InboundContext): Json {
  const who = ctx.addresses.resolve(participant.id, participant.phoneNumber ?? participant.lid);
  const view: Json = { jid: who.jid, admin: participant.admin ?? null };
  if (who.lid) view.lid = who.lid;
  return view;
}

function groupView(group: Partial<GroupMetadata>, ctx: InboundContext): Json {
  const view: Json = {};
  for (const [field, value] of Object.entries(group)) {
    if (value === undefined || field === 'participants') continue;
    view[field] = value;
  }
  if (group.participants) view.participants = group.participants.map((p) => participantView(p, ctx));
  return view;
}

/** `groups.upsert` (joined or created), `groups.update` (settings, subject...) and participant changes -> GROUP. */
export function groupEvents(
  input:
    | { kind: 'upsert'; groups: GroupMetadata[] }
    | { kind: 'update'; groups: Partial<GroupMetadata>[] }
    | { kind: 'participants'; update: BaileysEventMap['group-participants.update'] },
  ctx: InboundContext,
): CanonicalEvent[] {
  switch (input.kind) {
    case 'upsert':
      return input.groups.map((group) => ({ type: 'GROUP', data: { action: 'join', ...groupView(group, ctx) } }));
    case 'update':
      return input.groups.map((group) => ({ type: 'GROUP', data: { action: 'update', ...groupView(group, ctx) } }));
    case 'participants': {
      const { id, author, authorPn, participants, action } = input.update;
      const by = author ? ctx.addresses.resolve(author, authorPn) : undefined;
      const data: EventData<'GROUP'> = { action, id, participants: participants.map((p) => participantView(p, ctx)) };
      if (by) {
        data.author = by.jid;
        if (by.lid) data.authorLid = by.lid;
      }
      return [{ type: 'GROUP', data }];
    }
  }
}

/** `labels.edit` and `labels.association` -> LABEL. */
export function labelEvents(
  input: { kind: 'edit'; label: BaileysEventMap['labels.edit'] } | { kind: 'association'; change: BaileysEventMap['labels.association'] },
  ctx: InboundContext,
): CanonicalEvent[] {
  if (input.kind === 'edit') {
    const { id, name, color, deleted, predefinedId } = input.label;
    return [
      {
        type: 'LABEL',
        data: { action: deleted ? 'delete' : 'edit', labelId: id, name, color, deleted, ...(predefinedId ? { predefinedId } : {}) },
      },
    ];
  }
  const { association, type } = input.change;
  const chat = ctx.addresses.resolve(association.chatId);
  const data: EventData<'LABEL'> = { action: type, labelId: association.labelId, chatId: chat.jid };
  if (chat.lid) data.chatLid = chat.lid;
  if ('messageId' in association) data.messageId = association.messageId;
  return [{ type: 'LABEL', data }];
}

/** Newsletter (channel) notifications -> NEWSLETTER. */
export function newsletterEvents(
  input:
    | { kind: 'reaction'; event: BaileysEventMap['newsletter.reaction'] }
    | { kind: 'view'; event: BaileysEventMap['newsletter.view'] }
    | { kind: 'participants'; event: BaileysEventMap['newsletter-participants.update'] }
    | { kind: 'settings'; event: BaileysEventMap['newsletter-settings.update'] },
): CanonicalEvent[] {
  switch (input.kind) {
    case 'reaction':
      return [
        {
          type: 'NEWSLETTER',
          data: { action: 'reaction', newsletterId: input.event.id, serverId: input.event.server_id, reaction: input.event.reaction },
        },
      ];
    case 'view':
      return [
        {
          type: 'NEWSLETTER',
          data: { action: 'view', newsletterId: input.event.id, serverId: input.event.server_id, count: input.event.count },
        },
      ];
    case 'participants': {
      const { id, author, user, new_role, action } = input.event;
      return [{ type: 'NEWSLETTER', data: { action: 'participants', newsletterId: id, author, user, role: new_role, change: action } }];
    }
    case 'settings':
      return [{ type: 'NEWSLETTER', data: { action: 'settings', newsletterId: input.event.id, update: input.event.update as unknown } }];
  }
}

/** One history-sync chunk -> HISTORY_SYNC events (messages split into parts of HISTORY_MESSAGES_PER_EVENT). */
export function historyEvents(history: BaileysEventMap['messaging-history.set'], ctx: InboundContext): CanonicalEvent[] {
  const syncType =
    history.syncType === null || history.syncType === undefined
      ? null
      : (proto.HistorySync.HistorySyncType[history.syncType] ?? String(history.syncType));
  const messages = history.messages.filter(isUserMessage).map((m) => messageData(m, ctx.addresses));
  const chats = history.chats.map((chat) => {
    const who = ctx.addresses.resolve(chat.id ?? '');
    return {
      id: who.jid,
      ...(who.lid ? { lid: who.lid } : {}),
      name: chat.name ?? null,
      unreadCount: chat.unreadCount ?? 0,
      conversationTimestamp: toSeconds(chat.conversationTimestamp),
      archived: Boolean(chat.archived),
    };
  });
  const contacts = history.contacts.flatMap((contact) => {
    const data = contactData(contact, ctx);
    return data ? [data] : [];
  });
  const parts = Math.max(1, Math.ceil(messages.length / HISTORY_MESSAGES_PER_EVENT));
  const events: CanonicalEvent[] = [];
  for (let part = 0; part < parts; part++) {
    events.push({
      type: 'HISTORY_SYNC',
      data: {
        syncType,
        progress: history.progress ?? null,
        isLatest: Boolean(history.isLatest),
        part: part + 1,
        parts,
        // Chats and contacts go with the first part only.
        chats: part === 0 ? chats : [],
        contacts: part === 0 ? contacts : [],
        messages: messages.slice(part * HISTORY_MESSAGES_PER_EVENT, (part + 1) * HISTORY_MESSAGES_PER_EVENT),
      },
    });
  }
  return events;
}

/** MESSAGE for a decrypted poll vote: the vote message plus the option names chosen and the tally. */
export function pollVoteData(
  vote: WAMessage,
  pollKey: WAMessageKey,
  selectedOptions: string[],
  tally: { name: string; voters: string[] }[],
  addresses: AddressBook,
): EventData<'MESSAGE'> {
  const base = messageData(vote, addresses);
  return {
    ...base,
    pollVote: {
      pollKey: keyView(pollKey, addresses),
      voter: base.key.participant ?? (vote.key.fromMe ? 'me' : base.key.remoteJid),
      selectedOptions,
      results: tally.map((entry) => ({
        name: entry.name,
        votes: entry.voters.length,
        voters: entry.voters.map((v) => addresses.resolve(v).jid),
      })),
    },
  };
}

/** Every address an event batch mentions, so the directory can load their mapping in one query. */
export function addressesIn(events: Partial<BaileysEventMap>): string[] {
  const out: (string | null | undefined)[] = [];
  const keyJids = (key: WAMessageKey | null | undefined) => {
    if (key) out.push(key.remoteJid, key.participant, key.remoteJidAlt, key.participantAlt);
  };
  for (const m of events['messages.upsert']?.messages ?? []) keyJids(m.key);
  for (const u of events['messages.update'] ?? []) keyJids(u.key);
  for (const r of events['message-receipt.update'] ?? []) {
    keyJids(r.key);
    out.push(r.receipt.userJid);
  }
  const presence = events['presence.update'];
  if (presence) out.push(presence.id, ...Object.keys(presence.presences));
  for (const c of events.call ?? []) out.push(c.from, c.callerPn);
  for (const c of [...(events['contacts.upsert'] ?? []), ...(events['contacts.update'] ?? [])]) out.push(c.id, c.lid, c.phoneNumber);
  const participants = events['group-participants.update'];
  if (participants) out.push(participants.author, ...participants.participants.map((p) => p.id));
  const history = events['messaging-history.set'];
  if (history) {
    for (const m of history.messages) keyJids(m.key);
    for (const c of history.chats) out.push(c.id);
  }
  const association = events['labels.association'];
  if (association) out.push(association.association.chatId);
  return out.filter((jid): jid is string => typeof jid === 'string' && jid.length > 0);
}
