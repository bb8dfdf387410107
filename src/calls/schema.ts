/** Schemas of the /call routes. */
import { Type } from 'typebox';

export const CallSchema = Type.Object(
  {
    callId: Type.String(),
    from: Type.String({ description: 'The caller (JID).' }),
    direction: Type.Enum(['incoming', 'outgoing'] as const),
    isVideo: Type.Boolean(),
    isGroup: Type.Boolean(),
    status: Type.Enum(['ringing', 'rejected', 'missed', 'ended'] as const, {
      description: '`missed`: the caller hung up before an answer.',
    }),
    rejectedBy: Type.Union([Type.Enum(['user', 'auto'] as const), Type.Null()], {
      description: '`user`: POST /call/reject; `auto`: the auto-reject setting.',
    }),
    offeredAt: Type.Integer({ description: 'Unix seconds.' }),
    endedAt: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds.' }),
  },
  { title: 'Call' },
);

export const RejectBody = Type.Object(
  {
    callId: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'The `id` of the CALL event.',
      examples: ['F3A8B2C4D5E6F708192A3B4C5D6E7F80'],
    }),
    from: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'The caller JID (the `from` of the CALL event); drivers without a call log need it.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const CallSettingsSchema = Type.Object(
  {
    autoReject: Type.Boolean({ description: 'Reject every incoming call at once.' }),
    message: Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()], {
      description: 'Text sent to the caller after an automatic rejection; null sends nothing.',
    }),
  },
  { additionalProperties: false },
);

export const CallSettingsBody = Type.Object(
  {
    autoReject: Type.Boolean({ description: 'Reject every incoming call at once.' }),
    message: Type.Optional(CallSettingsSchema.properties.message),
  },
  { additionalProperties: false },
);
