import { Type } from 'typebox';
import { InstanceId, PhoneNumber } from '../http/schemas.js';
import { LIMITS, MessageKey } from '../outgoing/schema.js';

export { MessageKey };

const InstanceRef = { ...InstanceId, description: 'instanceId of a sandbox instance.' };
/** A virtual contact of the sandbox, shown with a number of its own in examples (the instance is `5511999990000`). */
const Contact = (description?: string) => ({ ...PhoneNumber, examples: ['5511988887777'], ...(description ? { description } : {}) });

export const ScanBody = Type.Object(
  { instanceId: InstanceRef, number: { ...PhoneNumber, description: 'The virtual phone that scans the QR; becomes the instance number.' } },
  { additionalProperties: false },
);
export const PairBody = Type.Object(
  {
    number: { ...PhoneNumber, description: 'The virtual phone confirming the code; must be the number given to POST /instance/pair.' },
    code: Type.String({ pattern: '^[0-9]{8}$', description: 'The 8-digit pairing code.', examples: ['48213907'] }),
  },
  { additionalProperties: false },
);
export const ConnectionReply = Type.Object({
  instanceId: Type.String(),
  status: Type.String(),
  number: Type.Optional(Type.String()),
});
export const ContactMessageBody = Type.Object(
  {
    from: Contact('The virtual contact sending the text.'),
    to: { ...PhoneNumber, description: 'The number of a connected sandbox instance.' },
    text: Type.String({ minLength: 1, maxLength: 65536, examples: ['Hi! Is my order #1042 on its way?'] }),
  },
  { additionalProperties: false },
);
export const ContactMessageReply = Type.Object({
  key: Type.Object({ remoteJid: Type.String(), fromMe: Type.Boolean(), id: Type.String() }),
  messageTimestamp: Type.Integer(),
});
export const ReadBody = Type.Object(
  {
    from: Contact('The contact who read the messages.'),
    to: { ...PhoneNumber, description: 'The instance number that sent them.' },
    messageIds: Type.Array(Type.String({ minLength: 1, maxLength: 128, examples: ['3EB0C431C26A1916D5A8'] }), {
      minItems: 1,
      maxItems: 1000,
    }),
  },
  { additionalProperties: false },
);
export const PresenceBody = Type.Object(
  {
    from: Contact(),
    to: PhoneNumber,
    presence: Type.Enum(['available', 'unavailable', 'composing', 'recording', 'paused'] as const, {
      description: '`available`/`unavailable` emit PRESENCE; `composing`/`recording`/`paused` emit CHAT_PRESENCE.',
    }),
  },
  { additionalProperties: false },
);
export const CallBody = Type.Object(
  { from: Contact(), to: PhoneNumber, isVideo: Type.Boolean({ default: false }) },
  { additionalProperties: false },
);
export const InstanceBody = Type.Object({ instanceId: InstanceRef }, { additionalProperties: false });
export const ContactBody = Type.Object(
  { number: Contact(), pushName: Type.String({ minLength: 1, maxLength: 128, examples: ['Maria Souza'] }) },
  { additionalProperties: false },
);

export const PollVoteBody = Type.Object(
  {
    from: Contact(),
    to: PhoneNumber,
    pollMessageId: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Key id of the poll the instance `to` sent.',
      examples: ['3EB0C431C26A1916D5A8'],
    }),
    selectedOptions: Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.pollOption }), {
      maxItems: LIMITS.pollOptionsMax,
      uniqueItems: true,
      description: 'Option names chosen (empty: the vote is withdrawn).',
      examples: [['Morning']],
    }),
  },
  { additionalProperties: false },
);
