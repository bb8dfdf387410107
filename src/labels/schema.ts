/** Schemas of the /label routes. */
import { Type } from 'typebox';
import { ChatId } from '../http/schemas.js';

export const LabelId = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'A label id (from /label/list or /label/create).',
  examples: ['3'],
});

const LabelName = Type.String({ minLength: 1, maxLength: 100, examples: ['Paid'] });
const LabelColor = Type.Integer({
  minimum: 0,
  maximum: 19,
  description: 'Colour index 0..19 of the WhatsApp Business palette.',
  examples: [5],
});

export const LabelSchema = Type.Object({ labelId: Type.String(), name: Type.String(), color: Type.Integer() }, { title: 'Label' });

export const CreateBody = Type.Object({ name: LabelName, color: { ...LabelColor, default: 0 } }, { additionalProperties: false });

export const EditBody = Type.Object(
  { labelId: LabelId, name: Type.Optional(LabelName), color: Type.Optional(LabelColor) },
  { additionalProperties: false, minProperties: 2 },
);

export const LabelBody = Type.Object({ labelId: LabelId }, { additionalProperties: false });

export const DeletedReply = Type.Object({ labelId: Type.String(), deleted: Type.Literal(true) });

export const TargetBody = Type.Object(
  {
    labelId: LabelId,
    chatId: ChatId,
    messageId: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Label this message of the chat instead of the chat itself.' }),
    ),
  },
  { additionalProperties: false },
);

export const TargetReply = Type.Object({
  labelId: Type.String(),
  chatId: Type.String(),
  messageId: Type.Optional(Type.String()),
  labels: Type.Array(Type.String(), { description: 'Every label id now on the chat (or on the message).' }),
});
