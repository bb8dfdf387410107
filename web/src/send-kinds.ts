/**
 * The message kinds of the Send tab, as one table: each row names the route and its fields; a form's
 * values become the request body field by field (empty optional fields are left out; files go as
 * multipart parts), and a row's `shape` reshapes what one flat form cannot say. No DOM and no JSX here: test/web-send-kinds.test.ts
 * sends every kind's body to a real gateway.
 */
import { BUTTON_TYPES, PIX_KEY_TYPES, STATUS_FONTS } from '../../src/vocabulary.js';

export type Json = { [key: string]: unknown };

interface Common {
  name: string;
  label: string;
  hint?: string;
  required?: boolean;
}

/** One form field; `group` is a repeated block of fields (an array of objects in the body). */
export type FieldSpec =
  | (Common & { type: 'text' | 'textarea' | 'url' | 'color'; initial?: string; placeholder?: string })
  | (Common & { type: 'number'; min?: number; max?: number; step?: number | 'any' })
  | (Common & { type: 'checkbox'; initial?: boolean })
  | (Common & { type: 'select'; options: readonly string[]; initial?: string })
  | (Common & { type: 'file'; accept?: string })
  | (Common & { type: 'lines'; placeholder?: string })
  | (Common & { type: 'group'; item: string; min: number; max: number; fields: FieldSpec[] });

export interface SendKind {
  key: string;
  label: string;
  path: string;
  /** Where the recipient goes: `number` (a chat), `chatId` (a message's chat), or nowhere (status posts, batches). */
  recipient: 'number' | 'chatId' | 'none';
  /** Takes the common chat options: quoted, mentions, delayMs. */
  chatOptions?: boolean;
  note?: string;
  fields: FieldSpec[];
  shape?: (body: Json) => Json;
}

const IMAGE_OR_VIDEO = 'image/jpeg,image/png,video/mp4,video/3gpp';

const button = (max: number): FieldSpec => ({
  name: 'buttons',
  label: 'Buttons',
  type: 'group',
  item: 'Button',
  min: 1,
  max,
  fields: [
    { name: 'type', label: 'Type', type: 'select', options: BUTTON_TYPES, initial: 'reply' },
    { name: 'text', label: 'Label', type: 'text', required: true },
    {
      name: 'value',
      label: 'Value',
      type: 'text',
      required: true,
      hint: 'reply: its id · url: the link · call: a number · copy: the code',
    },
  ],
});

/** The field a button's value goes to, by its type. */
const BUTTON_VALUE_FIELD: Record<(typeof BUTTON_TYPES)[number], string> = { reply: 'id', url: 'url', call: 'phoneNumber', copy: 'code' };

function shapeButtons(buttons: unknown): Json[] {
  return ((buttons as Json[] | undefined) ?? []).map(({ value, ...rest }) => ({
    ...rest,
    [BUTTON_VALUE_FIELD[rest.type as keyof typeof BUTTON_VALUE_FIELD]]: value,
  }));
}

export const SEND_KINDS: SendKind[] = [
  {
    key: 'text',
    label: 'Text',
    path: '/send/text',
    recipient: 'number',
    chatOptions: true,
    fields: [
      { name: 'text', label: 'Text', type: 'textarea', required: true },
      { name: 'linkPreview', label: 'Preview the first link', type: 'checkbox', initial: true },
    ],
  },
  {
    key: 'media',
    label: 'File (image, video, audio, document)',
    path: '/send/media',
    recipient: 'number',
    chatOptions: true,
    note: 'The kind is detected from the bytes unless you choose one.',
    fields: [
      { name: 'media', label: 'File', type: 'file', required: true },
      { name: 'type', label: 'Send as', type: 'select', options: ['', 'image', 'video', 'audio', 'document'], initial: '' },
      { name: 'caption', label: 'Caption', type: 'text' },
      { name: 'voiceNote', label: 'Voice note (OGG/Opus audio)', type: 'checkbox' },
    ],
  },
  {
    key: 'link',
    label: 'Link with preview',
    path: '/send/link',
    recipient: 'number',
    chatOptions: true,
    fields: [
      { name: 'url', label: 'Link', type: 'url', required: true, placeholder: 'https://' },
      { name: 'text', label: 'Text', type: 'textarea' },
      { name: 'title', label: 'Preview title', type: 'text' },
      { name: 'description', label: 'Preview description', type: 'text' },
      { name: 'thumbnail', label: 'Preview image', type: 'file', accept: 'image/*' },
    ],
  },
  {
    key: 'location',
    label: 'Location',
    path: '/send/location',
    recipient: 'number',
    chatOptions: true,
    fields: [
      { name: 'latitude', label: 'Latitude', type: 'number', required: true, min: -90, max: 90, step: 'any' },
      { name: 'longitude', label: 'Longitude', type: 'number', required: true, min: -180, max: 180, step: 'any' },
      { name: 'name', label: 'Place name', type: 'text' },
      { name: 'address', label: 'Address', type: 'text' },
    ],
  },
  {
    key: 'contact',
    label: 'Contact cards',
    path: '/send/contact',
    recipient: 'number',
    chatOptions: true,
    fields: [
      {
        name: 'contacts',
        label: 'Contacts',
        type: 'group',
        item: 'Contact',
        min: 1,
        max: 20,
        fields: [
          { name: 'fullName', label: 'Full name', type: 'text', required: true },
          { name: 'number', label: 'Phone (digits with country code)', type: 'text', required: true },
          { name: 'organization', label: 'Organization', type: 'text' },
          { name: 'email', label: 'Email', type: 'text' },
        ],
      },
    ],
    shape: ({ contacts, ...body }) => ({
      ...body,
      contacts: (contacts as Json[]).map(({ number, email, ...contact }) => ({
        ...contact,
        phones: [{ number }],
        ...(email ? { emails: [email] } : {}),
      })),
    }),
  },
  {
    key: 'poll',
    label: 'Poll',
    path: '/send/poll',
    recipient: 'number',
    chatOptions: true,
    fields: [
      { name: 'name', label: 'Question', type: 'text', required: true },
      { name: 'options', label: 'Options', type: 'lines', required: true, hint: '2 to 12, one per line.' },
      { name: 'selectableCount', label: 'How many a voter may pick', type: 'number', min: 1, max: 12 },
    ],
  },
  {
    key: 'reaction',
    label: 'Reaction',
    path: '/message/react',
    recipient: 'chatId',
    note: 'Reacts to a message of the chat above that this instance sent or received.',
    fields: [
      { name: 'messageId', label: 'Message id', type: 'text', required: true },
      { name: 'emoji', label: 'Emoji', type: 'text', initial: '👍', hint: 'Empty removes your reaction.' },
    ],
    shape: (body) => ({ ...body, emoji: body.emoji ?? '' }),
  },
  {
    key: 'sticker',
    label: 'Sticker',
    path: '/send/sticker',
    recipient: 'number',
    chatOptions: true,
    note: 'A WebP is sent as it is; PNG, JPEG and GIF become a 512×512 WebP.',
    fields: [{ name: 'media', label: 'Image', type: 'file', required: true, accept: 'image/webp,image/png,image/jpeg,image/gif' }],
  },
  {
    key: 'buttons',
    label: 'Buttons',
    path: '/send/button',
    recipient: 'number',
    chatOptions: true,
    note: 'Interactive: WhatsApp instances need the “interactive messages” setting.',
    fields: [
      { name: 'text', label: 'Text', type: 'textarea', required: true },
      { name: 'title', label: 'Header', type: 'text' },
      { name: 'footer', label: 'Footer', type: 'text' },
      { name: 'media', label: 'Header image or video', type: 'file', accept: IMAGE_OR_VIDEO },
      button(3),
    ],
    shape: (body) => ({ ...body, buttons: shapeButtons(body.buttons) }),
  },
  {
    key: 'list',
    label: 'List menu',
    path: '/send/list',
    recipient: 'number',
    chatOptions: true,
    note: 'Interactive: WhatsApp instances need the “interactive messages” setting.',
    fields: [
      { name: 'text', label: 'Text', type: 'textarea', required: true },
      { name: 'buttonText', label: 'Button label', type: 'text', required: true },
      { name: 'title', label: 'Header', type: 'text' },
      { name: 'footer', label: 'Footer', type: 'text' },
      {
        name: 'sections',
        label: 'Sections',
        type: 'group',
        item: 'Section',
        min: 1,
        max: 10,
        fields: [
          { name: 'title', label: 'Section title', type: 'text', required: true },
          {
            name: 'rows',
            label: 'Rows',
            type: 'group',
            item: 'Row',
            min: 1,
            max: 10,
            fields: [
              { name: 'id', label: 'Row id', type: 'text', required: true },
              { name: 'title', label: 'Row title', type: 'text', required: true },
              { name: 'description', label: 'Row description', type: 'text' },
            ],
          },
        ],
      },
    ],
  },
  {
    key: 'carousel',
    label: 'Carousel',
    path: '/send/carousel',
    recipient: 'number',
    chatOptions: true,
    note: 'Interactive: WhatsApp instances need the “interactive messages” setting. Every card has the same kind of media and number of buttons.',
    fields: [
      { name: 'text', label: 'Text', type: 'textarea', required: true },
      { name: 'footer', label: 'Footer', type: 'text' },
      {
        name: 'cards',
        label: 'Cards',
        type: 'group',
        item: 'Card',
        min: 2,
        max: 10,
        fields: [
          { name: 'media', label: 'Image or video', type: 'file', required: true, accept: IMAGE_OR_VIDEO },
          { name: 'text', label: 'Card text', type: 'text', required: true },
          { name: 'footer', label: 'Card footer', type: 'text' },
          button(2),
        ],
      },
    ],
    shape: ({ cards, ...body }) => ({
      ...body,
      cards: (cards as Json[]).map((card) => ({ ...card, buttons: shapeButtons(card.buttons) })),
    }),
  },
  {
    key: 'pix',
    label: 'Pix payment',
    path: '/send/pix',
    recipient: 'number',
    chatOptions: true,
    note: 'Interactive: WhatsApp instances need the “interactive messages” setting.',
    fields: [
      { name: 'merchantName', label: 'Receiver name', type: 'text', required: true },
      { name: 'keyType', label: 'Key type', type: 'select', options: PIX_KEY_TYPES, initial: 'EVP' },
      { name: 'key', label: 'Pix key', type: 'text', required: true },
      { name: 'amount', label: 'Amount (BRL)', type: 'number', min: 0.01, step: 0.01 },
      { name: 'text', label: 'Text', type: 'text' },
    ],
  },
  {
    key: 'forward',
    label: 'Forward',
    path: '/send/forward',
    recipient: 'number',
    note: 'Sends again a message this instance sent or received, to the chat above.',
    fields: [{ name: 'messageId', label: 'Message id', type: 'text', required: true }],
  },
  {
    key: 'status-text',
    label: 'Status: text',
    path: '/send/status/text',
    recipient: 'none',
    fields: [
      { name: 'text', label: 'Text', type: 'textarea', required: true },
      { name: 'backgroundColor', label: 'Background', type: 'color', initial: '#25d366' },
      { name: 'font', label: 'Font', type: 'select', options: Object.keys(STATUS_FONTS), initial: 'SYSTEM' },
      { name: 'audience', label: 'Who sees it', type: 'lines', required: true, hint: 'Numbers, one per line.' },
    ],
  },
  {
    key: 'status-media',
    label: 'Status: image, video or audio',
    path: '/send/status/media',
    recipient: 'none',
    fields: [
      { name: 'media', label: 'File', type: 'file', required: true, accept: 'image/*,video/*,audio/*' },
      { name: 'caption', label: 'Caption', type: 'text' },
      { name: 'audience', label: 'Who sees it', type: 'lines', required: true, hint: 'Numbers, one per line.' },
    ],
  },
  {
    key: 'batch',
    label: 'Batch of texts',
    path: '/send/batch/text',
    recipient: 'none',
    note: 'Sent one after another, paced; the reply is the batch id.',
    fields: [
      { name: 'messages', label: 'Messages', type: 'lines', required: true, hint: 'One per line: the number, a space, the text.' },
      { name: 'intervalMs', label: 'Pause between sends (ms)', type: 'number', min: 0 },
    ],
    shape: ({ messages, ...body }) => ({
      ...body,
      messages: (messages as string[]).map((line) => {
        const match = /^(\d{7,15})\s+(.+)$/.exec(line);
        if (!match) throw new Error(`not “number text”: ${line}`);
        return { number: match[1], text: match[2] };
      }),
    }),
  },
];

/** The common chat options, in a fold of every kind that takes them. */
export const CHAT_OPTIONS: FieldSpec[] = [
  { name: 'quoted', label: 'Reply to message id', type: 'text' },
  { name: 'mentions', label: 'Mention numbers', type: 'lines', hint: 'One per line; write @number in the text.' },
  { name: 'delayMs', label: 'Show “typing…” first (ms)', type: 'number', min: 0, max: 20000 },
];

export type Value = string | boolean | File | null | Values[];
export interface Values {
  [name: string]: Value;
}

let itemCount = 0;
/** Key of a group item's stable identity (for rendering); not a field, so never part of a body. */
export const ITEM_KEY = '__item';

/** A new, empty item of a repeated block, with its own identity. */
export function newGroupItem(fields: FieldSpec[]): Values {
  itemCount += 1;
  return { ...initialValues(fields), [ITEM_KEY]: `item-${itemCount}` };
}

export function initialValues(fields: FieldSpec[]): Values {
  const values: Values = {};
  for (const field of fields) {
    switch (field.type) {
      case 'checkbox':
        values[field.name] = field.initial ?? false;
        break;
      case 'file':
        values[field.name] = null;
        break;
      case 'group':
        values[field.name] = Array.from({ length: field.min }, () => newGroupItem(field.fields));
        break;
      case 'text':
      case 'textarea':
      case 'url':
      case 'color':
      case 'select':
        values[field.name] = field.initial ?? '';
        break;
      case 'number':
      case 'lines':
        values[field.name] = '';
        break;
    }
  }
  return values;
}

/** The request body of the filled fields; empty optional ones are left out. */
export function bodyOf(fields: FieldSpec[], values: Values): Json {
  const body: Json = {};
  for (const field of fields) {
    const value = values[field.name];
    switch (field.type) {
      case 'checkbox':
        body[field.name] = value === true;
        break;
      case 'file':
        // Kept as the File: requestBody() sends it as a multipart/form-data part.
        if (value instanceof File) body[field.name] = value;
        break;
      case 'group':
        if (Array.isArray(value) && value.length > 0) body[field.name] = value.map((item) => bodyOf(field.fields, item));
        break;
      case 'number':
        if (typeof value === 'string' && value.trim() !== '') body[field.name] = Number(value);
        break;
      case 'lines': {
        const lines = typeof value === 'string' ? value.split('\n').map((line) => line.trim()) : [];
        if (lines.some(Boolean)) body[field.name] = lines.filter(Boolean);
        break;
      }
      case 'text':
      case 'textarea':
      case 'url':
      case 'color':
      case 'select':
        if (typeof value === 'string' && value.trim() !== '') body[field.name] = field.type === 'textarea' ? value : value.trim();
        break;
    }
  }
  return body;
}

/** The request body of one kind: its fields, the chat options it takes, its reshaping, and the recipient. */
export function sendBody(kind: SendKind, values: Values, options: Values, to: string): Json {
  let body = bodyOf(kind.fields, values);
  if (kind.chatOptions) {
    const { quoted, ...rest } = bodyOf(CHAT_OPTIONS, options);
    body = { ...body, ...rest, ...(typeof quoted === 'string' ? { quoted: { id: quoted } } : {}) };
  }
  if (kind.shape) body = kind.shape(body);
  if (kind.recipient !== 'none') body = { [kind.recipient]: to.trim(), ...body };
  return body;
}

/**
 * What to send: the JSON body when it holds no file; otherwise multipart/form-data (the media
 * routes take it), each file as a part at its path (`media`, `thumbnail`, `cards[0].media`) and every
 * other field as text (JSON for objects and lists), so the bytes travel as they are, not as base64.
 */
export function requestBody(body: Json): Json | FormData {
  const files: [string, File][] = [];
  const rest: Json = {};
  for (const [key, value] of Object.entries(body)) {
    if (value instanceof File) files.push([key, value]);
    else if (Array.isArray(value))
      rest[key] = value.map((item: unknown, index) => {
        if (typeof item !== 'object' || item === null) return item;
        const kept: Json = {};
        for (const [field, inner] of Object.entries(item as Json)) {
          if (inner instanceof File) files.push([`${key}[${index}].${field}`, inner]);
          else kept[field] = inner;
        }
        return kept;
      });
    else rest[key] = value;
  }
  if (files.length === 0) return rest;
  const form = new FormData();
  for (const [key, value] of Object.entries(rest)) form.append(key, typeof value === 'string' ? value : JSON.stringify(value));
  for (const [name, file] of files) form.append(name, file, file.name);
  return form;
}
