import { Type } from 'typebox';
import { PhoneNumber } from '../http/schemas.js';

export const MessageKey = Type.Object({
  remoteJid: Type.String({ description: 'The chat, in network address form (`<number>@s.whatsapp.net`).' }),
  fromMe: Type.Boolean(),
  id: Type.String({ description: 'Message id; use it for duplicate detection.' }),
});

export const SendReply = Type.Object({
  key: MessageKey,
  messageTimestamp: Type.Integer({ description: 'Unix seconds.' }),
  status: Type.Union([Type.Literal('SENT'), Type.Literal('PENDING')], {
    description: '`SENT`: the network accepted it. `PENDING`: queued; a SEND_MESSAGE event confirms it.',
  }),
  message: Type.Record(Type.String(), Type.Unknown(), { description: 'The content as sent, in the network payload shape.' }),
});

export const SendTextBody = Type.Object(
  {
    number: PhoneNumber,
    text: Type.String({ minLength: 1, maxLength: 65536, description: 'The message text (1 to 65536 characters).' }),
  },
  { additionalProperties: false },
);
