/**
 * Bodies and replies of /send and /message. Every kind shares the same field names: `number` (the
 * recipient), `media` (one way to give media), `quoted` (reply to a stored message), `mentions`
 * and `delayMs`. Limits are WhatsApp's own (the Cloud API documents the same numbers).
 */
import { Type, type TSchema } from 'typebox';
import { errorResponsesOf, PHONE_NUMBER_PATTERN, PhoneNumber } from '../http/schemas.js';
import { BUTTON_TYPES, PIX_KEY_TYPES, STATUS_FONTS, type StatusFont } from '../network/port.js';
import { PIX_KEY_MAX, PIX_MERCHANT_NAME_MAX } from './pix.js';
import { PHONE_LABELS } from './vcard.js';

export const LIMITS = {
  text: 65_536,
  caption: 4096,
  mentions: 50,
  delayMs: 20_000,
  buttons: 3,
  buttonText: 20,
  buttonId: 256,
  interactiveBody: 1024,
  headerText: 60,
  footerText: 60,
  listSections: 10,
  listRows: 10,
  listRowTitle: 24,
  listRowDescription: 72,
  listRowId: 200,
  listSectionTitle: 24,
  listBody: 4096,
  pollOptionsMin: 2,
  pollOptionsMax: 12,
  pollName: 255,
  pollOption: 100,
  carouselCardsMin: 2,
  carouselCardsMax: 10,
  carouselCardButtons: 2,
  carouselCardText: 160,
  contacts: 20,
  contactPhones: 10,
  batchItems: 1000,
  statusText: 700,
  statusAudience: 1000,
} as const;

export const MessageKey = Type.Object({
  remoteJid: Type.String({
    description: 'The chat, in network address form (`<number>@s.whatsapp.net`; `status@broadcast` for status posts).',
  }),
  fromMe: Type.Boolean(),
  id: Type.String({ description: 'Message id: quote, forward or download with it; use it for duplicate detection.' }),
});

export const SendReply = Type.Object(
  {
    instanceId: Type.String({
      description: 'The instance that sent it: the caller, or with a failover-group token the member that served.',
    }),
    key: MessageKey,
    messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
    status: Type.Union([Type.Literal('SENT'), Type.Literal('PENDING')], {
      description: '`SENT`: the network accepted it. `PENDING`: queued; a SEND_MESSAGE event confirms it.',
    }),
    message: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The content as sent, in the network payload shape (e.g. `imageMessage`, `pollCreationMessageV3`).',
    }),
  },
  { title: 'SendReply' },
);

// ---- shared pieces ----

export const MediaInput = Type.Object(
  {
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        description:
          'An https URL the gateway downloads (within MEDIA_FETCH_TIMEOUT_MS and the size limit; redirects followed, private addresses refused).',
      }),
    ),
    base64: Type.Optional(Type.String({ minLength: 1, description: 'The bytes as base64 (a `data:<type>;base64,` prefix is accepted).' })),
    mimetype: Type.Optional(
      Type.String({
        minLength: 3,
        maxLength: 129,
        description: 'Only a hint: the type is sniffed from the bytes. Used for documents whose format has no signature (CSV, TXT, JSON).',
      }),
    ),
    filename: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, pattern: '^[^/\\\\\\u0000-\\u001f]+$', description: 'File name shown for documents.' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Exactly one of `url` or `base64`.',
    examples: [{ url: 'https://example.com/photo.jpg' }, { base64: 'iVBORw0KGgo...', filename: 'photo.png' }],
  },
);

const Quoted = Type.Object(
  {
    id: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Id of a message this instance sent or received (kept for MESSAGE_RETENTION_DAYS).',
      examples: ['3EB0C431C26A1916D5A8'],
    }),
  },
  { additionalProperties: false, description: 'Reply to (quote) a stored message.' },
);

const Mentions = Type.Array(PhoneNumber, {
  maxItems: LIMITS.mentions,
  uniqueItems: true,
  description: `Numbers to mention (up to ${LIMITS.mentions}); write \`@<number>\` in the text where each should appear.`,
});

const DelayMs = Type.Integer({
  minimum: 0,
  maximum: LIMITS.delayMs,
  description: `Show "typing…" ("recording…" before a voice note) for this many milliseconds, then send (0 to ${LIMITS.delayMs}). The request waits that long.`,
});

/** A person's number, or a group the instance takes part in. */
const Recipient = Type.String({
  pattern: '^([0-9]{7,15}|[0-9]{6,30}(-[0-9]{1,15})?@g\\.us)$',
  description:
    'The chat: digits with country code (7 to 15, E.164 without "+"), or a group id `<id>@g.us`. A group must have the instance as participant (403 otherwise; 403 also in an announcement group when the instance is not an admin; 404 unknown group). Newsletters are posted to with POST /newsletter/send.',
  examples: ['5511999990000', '120363025246125888@g.us'],
});

/** The fields every message to one chat takes. */
const Chat = {
  number: Recipient,
  quoted: Type.Optional(Quoted),
  mentions: Type.Optional(Mentions),
  delayMs: Type.Optional(DelayMs),
};

const strict = { additionalProperties: false } as const;

const HttpUrl = (description: string) => Type.String({ minLength: 8, maxLength: 2048, pattern: '^https?://[^\\s]+$', description });

const ButtonText = Type.String({
  minLength: 1,
  maxLength: LIMITS.buttonText,
  description: `Label (1 to ${LIMITS.buttonText} characters).`,
});

export const Button = Type.Object(
  {
    type: Type.Enum(BUTTON_TYPES, {
      description:
        '`reply` (quick reply: the tap comes back as a message with its `id`), `url` (opens `url`), `call` (calls `phoneNumber`), `copy` (copies `code`).',
    }),
    text: ButtonText,
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.buttonId,
        description: '`reply` only, required: returned when tapped; unique in the message.',
      }),
    ),
    url: Type.Optional(HttpUrl('`url` only, required.')),
    phoneNumber: Type.Optional(
      Type.String({ pattern: PHONE_NUMBER_PATTERN, description: '`call` only, required: digits with country code.' }),
    ),
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: '`copy` only, required: the text copied.' })),
  },
  { ...strict, description: 'One button; the fields besides `type` and `text` depend on the type.' },
);

// ---- bodies ----

export const SendTextBody = Type.Object(
  {
    ...Chat,
    text: Type.String({ minLength: 1, maxLength: LIMITS.text, description: `The message text (1 to ${LIMITS.text} characters).` }),
    linkPreview: Type.Optional(
      Type.Boolean({
        default: true,
        description:
          'Mark the first URL of the text for a link preview (default true). For a preview with title, description and image use /send/link.',
      }),
    ),
  },
  { ...strict, examples: [{ number: '5511999990001', text: 'Your order #1042 has shipped.' }] },
);

export const SEND_MEDIA_TYPES = ['image', 'video', 'audio', 'document'] as const;

export const SendMediaBody = Type.Object(
  {
    ...Chat,
    media: MediaInput,
    type: Type.Optional(
      Type.Enum(SEND_MEDIA_TYPES, {
        description:
          'image (JPEG, PNG), video (MP4, 3GP), audio (OGG/Opus, OGG, MP3, M4A, AAC, AMR) or document (any file). Omitted: inferred from the bytes (anything else is a document).',
      }),
    ),
    caption: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.caption, description: 'Shown under an image, video or document (not audio).' }),
    ),
    voiceNote: Type.Optional(Type.Boolean({ description: 'Audio only: send as a voice note (push-to-talk). Needs OGG/Opus.' })),
  },
  { ...strict, examples: [{ number: '5511999990001', media: { url: 'https://example.com/receipt.jpg' }, caption: 'Your receipt' }] },
);

export const SendLinkBody = Type.Object(
  {
    ...Chat,
    url: HttpUrl('The link (http or https). It is not fetched: the preview shows what you give.'),
    text: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: LIMITS.text,
        description: 'Message text; the URL is appended when the text does not contain it. Default: the URL alone.',
      }),
    ),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Preview title.' })),
    description: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Preview description.' })),
    thumbnail: Type.Optional(
      Type.Object(MediaInput.properties, {
        ...strict,
        description: 'Preview image (JPEG, PNG, WebP or GIF; re-encoded as a JPEG of at most 320 px).',
      }),
    ),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        url: 'https://example.com/track/1042',
        title: 'Track your order',
        description: 'Order #1042, shipped today',
      },
    ],
  },
);

export const SendLocationBody = Type.Object(
  {
    ...Chat,
    latitude: Type.Number({ minimum: -90, maximum: 90, description: 'Degrees, -90 to 90.' }),
    longitude: Type.Number({ minimum: -180, maximum: 180, description: 'Degrees, -180 to 180.' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Place name.' })),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Street address.' })),
    url: Type.Optional(HttpUrl('A link about the place.')),
  },
  {
    ...strict,
    examples: [
      { number: '5511999990001', latitude: -23.5614, longitude: -46.6559, name: 'Our store', address: 'Av. Paulista 1000, São Paulo' },
    ],
  },
);

export const ContactInputSchema = Type.Object(
  {
    fullName: Type.String({ minLength: 1, maxLength: 256, description: 'Name shown on the card.' }),
    organization: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Job title.' })),
    phones: Type.Array(
      Type.Object(
        {
          number: PhoneNumber,
          label: Type.Optional(Type.Enum(PHONE_LABELS, { description: 'Default CELL.' })),
        },
        strict,
      ),
      {
        minItems: 1,
        maxItems: LIMITS.contactPhones,
        description: `1 to ${LIMITS.contactPhones} numbers; each links to its WhatsApp account (\`waid\`).`,
      },
    ),
    emails: Type.Optional(Type.Array(Type.String({ format: 'email', maxLength: 254 }), { maxItems: 5 })),
    urls: Type.Optional(Type.Array(HttpUrl('A web address.'), { maxItems: 5 })),
    note: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  },
  { ...strict, description: 'Built into a vCard 3.0 with every value escaped.' },
);

export const SendContactBody = Type.Object(
  {
    ...Chat,
    contacts: Type.Array(ContactInputSchema, {
      minItems: 1,
      maxItems: LIMITS.contacts,
      description: `1 to ${LIMITS.contacts} contact cards (one: \`contactMessage\`; several: \`contactsArrayMessage\`).`,
    }),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        contacts: [
          {
            fullName: 'Maria Souza',
            organization: 'Loja Central',
            phones: [{ number: '5511988887777', label: 'WORK' }],
            emails: ['maria@example.com'],
          },
        ],
      },
    ],
  },
);

export const SendButtonBody = Type.Object(
  {
    ...Chat,
    text: Type.String({
      minLength: 1,
      maxLength: LIMITS.interactiveBody,
      description: `Body text (1 to ${LIMITS.interactiveBody} characters).`,
    }),
    title: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.headerText, description: `Header text (up to ${LIMITS.headerText} characters).` }),
    ),
    footer: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.footerText, description: `Footer text (up to ${LIMITS.footerText} characters).` }),
    ),
    media: Type.Optional(Type.Object(MediaInput.properties, { ...strict, description: 'Header image (JPEG, PNG) or video (MP4, 3GP).' })),
    buttons: Type.Array(Button, {
      minItems: 1,
      maxItems: LIMITS.buttons,
      description: `1 to ${LIMITS.buttons} buttons (what WhatsApp shows in a message); \`reply\` ids unique.`,
    }),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        text: 'Your order #1042 is ready. Pick it up today?',
        footer: 'Loja Central',
        buttons: [
          { type: 'reply', text: 'Yes, today', id: 'pickup-today' },
          { type: 'reply', text: 'Tomorrow', id: 'pickup-tomorrow' },
          { type: 'url', text: 'See the order', url: 'https://example.com/orders/1042' },
        ],
      },
    ],
  },
);

export const SendListBody = Type.Object(
  {
    ...Chat,
    text: Type.String({ minLength: 1, maxLength: LIMITS.listBody, description: `Body text (1 to ${LIMITS.listBody} characters).` }),
    title: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.headerText, description: `Header (up to ${LIMITS.headerText} characters).` }),
    ),
    footer: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.footerText, description: `Footer (up to ${LIMITS.footerText} characters).` }),
    ),
    buttonText: Type.String({
      minLength: 1,
      maxLength: LIMITS.buttonText,
      description: `Label of the button that opens the list (1 to ${LIMITS.buttonText} characters).`,
    }),
    sections: Type.Array(
      Type.Object(
        {
          title: Type.String({
            minLength: 1,
            maxLength: LIMITS.listSectionTitle,
            description: `1 to ${LIMITS.listSectionTitle} characters.`,
          }),
          rows: Type.Array(
            Type.Object(
              {
                id: Type.String({ minLength: 1, maxLength: LIMITS.listRowId, description: 'Returned when chosen; unique in the list.' }),
                title: Type.String({
                  minLength: 1,
                  maxLength: LIMITS.listRowTitle,
                  description: `1 to ${LIMITS.listRowTitle} characters.`,
                }),
                description: Type.Optional(
                  Type.String({
                    minLength: 1,
                    maxLength: LIMITS.listRowDescription,
                    description: `Up to ${LIMITS.listRowDescription} characters.`,
                  }),
                ),
              },
              strict,
            ),
            { minItems: 1, maxItems: LIMITS.listRows },
          ),
        },
        strict,
      ),
      {
        minItems: 1,
        maxItems: LIMITS.listSections,
        description: `1 to ${LIMITS.listSections} sections, with at most ${LIMITS.listRows} rows in all.`,
      },
    ),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        text: 'Choose a delivery slot for order #1042.',
        buttonText: 'Delivery slots',
        sections: [
          {
            title: 'Tomorrow',
            rows: [
              { id: 'slot-morning', title: 'Morning', description: '8:00 to 12:00' },
              { id: 'slot-afternoon', title: 'Afternoon', description: '13:00 to 18:00' },
            ],
          },
        ],
      },
    ],
  },
);

export const SendPollBody = Type.Object(
  {
    ...Chat,
    name: Type.String({ minLength: 1, maxLength: LIMITS.pollName, description: 'The question.' }),
    options: Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.pollOption }), {
      minItems: LIMITS.pollOptionsMin,
      maxItems: LIMITS.pollOptionsMax,
      uniqueItems: true,
      description: `${LIMITS.pollOptionsMin} to ${LIMITS.pollOptionsMax} distinct options.`,
    }),
    selectableCount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: LIMITS.pollOptionsMax,
        default: 1,
        description: 'How many options a voter may pick (1 = single choice, the default); at most the number of options.',
      }),
    ),
  },
  {
    ...strict,
    examples: [{ number: '5511999990001', name: 'Which delivery slot suits you?', options: ['Morning', 'Afternoon', 'Evening'] }],
  },
);

export const SendStickerBody = Type.Object(
  {
    ...Chat,
    media: Type.Object(MediaInput.properties, {
      ...strict,
      description: 'A WebP sticker (sent as is), or a PNG, JPEG or GIF converted to a 512x512 WebP.',
      examples: [{ url: 'https://example.com/stickers/thanks.webp' }],
    }),
  },
  strict,
);

export const SendPixBody = Type.Object(
  {
    ...Chat,
    merchantName: Type.String({
      minLength: 1,
      maxLength: PIX_MERCHANT_NAME_MAX,
      description: `Receiver name shown to the payer (1 to ${PIX_MERCHANT_NAME_MAX} characters).`,
    }),
    keyType: Type.Enum(PIX_KEY_TYPES, {
      description: 'CPF (11 digits), CNPJ (14 characters), PHONE (+55...), EMAIL, or EVP (random key, a UUID).',
    }),
    key: Type.String({
      minLength: 1,
      maxLength: PIX_KEY_MAX,
      description: 'The Pix key; checked for its type (CPF/CNPJ check digits) and normalised.',
    }),
    amount: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000_000,
        description: 'Amount in BRL, at most 2 decimals. Omitted: the payer chooses.',
      }),
    ),
    text: Type.Optional(
      Type.String({ minLength: 1, maxLength: LIMITS.interactiveBody, description: 'Message text above the payment button.' }),
    ),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        merchantName: 'Loja Central',
        keyType: 'EMAIL',
        key: 'pagamentos@example.com',
        amount: 89.9,
        text: 'Order #1042: pay with Pix.',
      },
    ],
  },
);

export const CarouselCard = Type.Object(
  {
    media: Type.Object(MediaInput.properties, {
      ...strict,
      description: 'Card image (JPEG, PNG) or video (MP4, 3GP); every card the same kind.',
    }),
    text: Type.String({
      minLength: 1,
      maxLength: LIMITS.carouselCardText,
      description: `Card text (1 to ${LIMITS.carouselCardText} characters).`,
    }),
    footer: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.footerText })),
    buttons: Type.Array(Button, {
      minItems: 1,
      maxItems: LIMITS.carouselCardButtons,
      description: `1 to ${LIMITS.carouselCardButtons} buttons; every card the same number.`,
    }),
  },
  strict,
);

export const SendCarouselBody = Type.Object(
  {
    ...Chat,
    text: Type.String({ minLength: 1, maxLength: LIMITS.interactiveBody, description: 'Text above the cards.' }),
    footer: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.footerText })),
    cards: Type.Array(CarouselCard, {
      minItems: LIMITS.carouselCardsMin,
      maxItems: LIMITS.carouselCardsMax,
      description: `${LIMITS.carouselCardsMin} to ${LIMITS.carouselCardsMax} cards, scrolled sideways.`,
    }),
  },
  {
    ...strict,
    examples: [
      {
        number: '5511999990001',
        text: 'New arrivals this week',
        cards: [
          {
            media: { url: 'https://example.com/products/sneaker.jpg' },
            text: 'Runner sneaker, R$ 299',
            buttons: [{ type: 'url', text: 'Buy', url: 'https://example.com/products/sneaker' }],
          },
          {
            media: { url: 'https://example.com/products/backpack.jpg' },
            text: 'City backpack, R$ 189',
            buttons: [{ type: 'url', text: 'Buy', url: 'https://example.com/products/backpack' }],
          },
        ],
      },
    ],
  },
);

export const SendForwardBody = Type.Object(
  {
    number: Recipient,
    messageId: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Id of a message this instance sent or received (its media is sent again).',
      examples: ['3EB0C431C26A1916D5A8'],
    }),
    delayMs: Type.Optional(DelayMs),
  },
  strict,
);

export const BatchItem = Type.Object(
  {
    number: PhoneNumber,
    text: Type.String({ minLength: 1, maxLength: LIMITS.text, examples: ['Your order #1042 has shipped.'] }),
    mentions: Type.Optional(Mentions),
    linkPreview: Type.Optional(Type.Boolean({ default: true })),
  },
  strict,
);

export const SendBatchBody = Type.Object(
  {
    messages: Type.Array(BatchItem, {
      minItems: 1,
      maxItems: LIMITS.batchItems,
      description: `1 to ${LIMITS.batchItems} texts, sent in this order.`,
      examples: [
        [
          { number: '5511999990001', text: 'Hi Ana, your order #1042 has shipped.' },
          { number: '5511999990002', text: 'Hi Bruno, your order #1043 has shipped.' },
        ],
      ],
    }),
    intervalMs: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 3_600_000,
        description:
          'Pause between two sends, in ms. Default BATCH_INTERVAL_MS (2000); values below BATCH_MIN_INTERVAL_MS (500) are refused.',
      }),
    ),
  },
  strict,
);

const BATCH_STATUSES = ['queued', 'running', 'completed', 'cancelled'] as const;
const BATCH_ITEM_STATUSES = ['pending', 'sending', 'sent', 'failed', 'cancelled'] as const;

export const BatchAccepted = Type.Object({
  batchId: Type.String(),
  status: Type.Enum(BATCH_STATUSES),
  total: Type.Integer(),
  intervalMs: Type.Integer(),
  createdAt: Type.String({ description: 'ISO 8601 UTC.' }),
});

export const BatchProgress = Type.Object({
  batchId: Type.String(),
  status: Type.Enum(BATCH_STATUSES, {
    description: "`queued` (waits for the instance's earlier batches), `running`, `completed` (every item sent or failed), `cancelled`.",
  }),
  total: Type.Integer(),
  sent: Type.Integer(),
  failed: Type.Integer(),
  pending: Type.Integer(),
  cancelled: Type.Integer(),
  intervalMs: Type.Integer(),
  createdAt: Type.String(),
  startedAt: Type.Union([Type.String(), Type.Null()]),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
  items: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'Position in `messages`, from 0.' }),
      number: Type.String(),
      status: Type.Enum(BATCH_ITEM_STATUSES, { description: '`sending` is seen only while the send is under way.' }),
      messageId: Type.Union([Type.String(), Type.Null()], { description: 'Key id of the sent message.' }),
      error: Type.Union([Type.String(), Type.Null()]),
      sentAt: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

export const BatchParams = Type.Object({ batchId: Type.String({ minLength: 1, maxLength: 64 }) }, strict);

export const STATUS_FONT_NAMES = Object.keys(STATUS_FONTS) as StatusFont[];

const Audience = Type.Array(PhoneNumber, {
  minItems: 1,
  maxItems: LIMITS.statusAudience,
  uniqueItems: true,
  description: `Who sees the post: 1 to ${LIMITS.statusAudience} numbers (the network's \`statusJidList\`).`,
  examples: [['5511999990001', '5511999990002']],
});

export const SendStatusTextBody = Type.Object(
  {
    text: Type.String({
      minLength: 1,
      maxLength: LIMITS.statusText,
      description: `1 to ${LIMITS.statusText} characters.`,
      examples: ['Open until 22:00 today!'],
    }),
    backgroundColor: Type.Optional(
      Type.String({ pattern: '^#[0-9A-Fa-f]{6}$', default: '#25D366', description: 'Background as `#RRGGBB` (default `#25D366`).' }),
    ),
    font: Type.Optional(Type.Enum(STATUS_FONT_NAMES, { default: 'SYSTEM', description: 'Typeface (default SYSTEM).' })),
    audience: Audience,
  },
  strict,
);

export const SendStatusMediaBody = Type.Object(
  {
    media: Type.Object(MediaInput.properties, {
      ...strict,
      description: 'An image (JPEG, PNG), a video (MP4, 3GP) or audio.',
      examples: [{ url: 'https://example.com/promo.jpg' }],
    }),
    caption: Type.Optional(Type.String({ minLength: 1, maxLength: LIMITS.statusText, examples: ['20% off all week'] })),
    audience: Audience,
  },
  strict,
);

export const MessageIdParams = Type.Object(
  { messageId: Type.String({ minLength: 1, maxLength: 128, description: 'The message key id.' }) },
  strict,
);

export const MediaBase64Reply = Type.Object({
  messageId: Type.String(),
  mimetype: Type.String(),
  fileLength: Type.Integer(),
  fileName: Type.Union([Type.String(), Type.Null()]),
  sha256: Type.String({ description: 'Lowercase hex SHA-256 of the bytes.' }),
  base64: Type.String(),
});

export const MediaSettings = Type.Object(
  {
    mediaBase64InEvents: Type.Boolean({
      description: 'Received media up to MEDIA_EVENT_BASE64_MAX_BYTES also comes inline as `data.media.base64` in MESSAGE events.',
    }),
  },
  strict,
);

// ---- documented errors of media routes ----

const SEND_ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input: a missing or unknown field, a wrong type or a value out of range, `media` with neither or both of `url` and `base64`, invalid base64, a non-https URL, rules the schema cannot state (duplicate button ids, more rows than allowed, ...).',
  403: 'The admin key on an instance route, or the network refuses this account the send.',
  404: "The `quoted` (or forwarded) message id is not in this instance's message store.",
  409: 'The instance is not connected.',
  413: "Media larger than its kind's limit (MEDIA_MAX_<KIND>_BYTES), or a body larger than MEDIA_BODY_LIMIT_BYTES.",
  415: 'Media of a type the kind does not take, as sniffed from the bytes (e.g. a GIF as an image).',
  422: 'The media URL could not be used: private/loopback address or a redirect to one (MEDIA_ALLOW_PRIVATE_URLS), HTTP error, timeout (MEDIA_FETCH_TIMEOUT_MS), too many redirects.',
};

/** The error replies of a /send route: the common ones plus `statuses` (e.g. the media routes' 413, 415, 422). */
export function sendErrors(...statuses: number[]): Record<number, TSchema> {
  return errorResponsesOf([401, 403, 404, 409, 502, 503, ...statuses], SEND_ERROR_TEXT);
}
