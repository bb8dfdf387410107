/** Schemas shared by every feature: error replies, paging, phone numbers. */
import { Type, type TSchema } from 'typebox';
import { PHONE_NUMBER_PATTERN } from '../network/addressing.js';
import { ERROR_CODE_LIST, ERROR_CODES, type ErrorCode } from '../errors.js';

/**
 * The one error body, `{ error, code }` plus extras; registered once (app.addSchema) and referenced
 * by every route as `Error#`, so the OpenAPI document has it once under components.schemas.Error.
 */
export const ErrorReply = Type.Object(
  {
    error: Type.String({ description: 'What went wrong, in plain words.' }),
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: ERROR_CODE_LIST,
      description: 'Stable machine-readable code; every code, its status and meaning: docs/errors.md.',
    }),
    details: Type.Optional(
      Type.Array(Type.String(), { description: 'validation_failed: every problem found (at most 20); `error` is the first.' }),
    ),
    retryAfter: Type.Optional(Type.Number({ description: 'Seconds to wait (rate_limited only).' })),
  },
  { $id: 'Error', additionalProperties: true, description: 'Every error has this shape.' },
);

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input: malformed JSON, wrong field type, missing or unknown field, value out of range.',
  401: 'Missing or invalid `apikey` ("invalid api key"), or a rotated token past its grace period ("token expired, please use the new token").',
  403: 'The key is valid but not for this route (instance token on an admin route, or the admin key on an instance route), or the network refuses the operation to this account (e.g. not a group admin, not a business account).',
  404: 'The addressed resource does not exist.',
  409: 'The request conflicts with the current state (name taken, instance not connected).',
  410: 'Unprefixed route called after its sunset (2027-01-01).',
  413: 'Body larger than BODY_LIMIT_BYTES.',
  415: 'Content-Type is not application/json.',
  429: 'Rate limit exceeded: `{"error":"rate limit exceeded","code":"rate_limited","retryAfter":<seconds>}` and a `Retry-After` header.',
  501: 'The instance network driver does not support this operation yet.',
  502: 'The network refused or failed the operation, or (cluster mode, `forward_failed`) the process holding the instance took the request and never answered.',
  503: 'The network driver is not available, this process is on standby, or (cluster mode) the instance is moving between processes (`instance_moving`, `retryAfter`).',
};

/** The declared codes an error status can carry, for its description. */
function codesOf(status: number): string {
  const codes = ERROR_CODE_LIST.filter((code) => ERROR_CODES[code].status === status);
  return codes.length ? ` Codes: ${codes.map((code) => `\`${code}\``).join(', ')}.` : '';
}

/**
 * The documented error replies of a route: 400 and 429 always, plus `statuses`; `texts` overrides
 * the description of a status where a route group says more (e.g. the /send routes' media errors).
 */
export function errorResponsesOf(statuses: number[], texts: Record<number, string> = {}): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const status of [...new Set([400, 429, ...statuses])].sort()) {
    out[status] = Type.Unsafe({ $ref: 'Error#', description: `${texts[status] ?? ERROR_TEXT[status] ?? 'Error.'}${codesOf(status)}` });
  }
  return out;
}

/** The documented error replies of a route; 400, 401 and 429 apply to nearly all of them. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return errorResponsesOf(statuses);
}

/** The one phone-number rule: E.164 without "+", 7 to 15 digits (network/addressing.ts normalises). */
export { PHONE_NUMBER_PATTERN };

export const PhoneNumber = Type.String({
  pattern: PHONE_NUMBER_PATTERN,
  description: 'Digits only, with country code, 7 to 15 digits (E.164 without "+"). Normalised to `<number>@s.whatsapp.net`.',
  examples: ['5511999990000'],
});

/** A chat: a phone number, or a JID (network/addressing.ts chatJidOf normalises it). */
export const ChatId = Type.String({
  pattern: '^([0-9]{7,15}|[0-9]{7,15}(:[0-9]+)?@s\\.whatsapp\\.net|[0-9]{1,25}@lid|[0-9]+(-[0-9]+)?@g\\.us|[0-9]+@newsletter)$',
  description:
    'A chat: digits-only number for a person (normalised to `<number>@s.whatsapp.net`), or a JID (`<number>@s.whatsapp.net`, `<id>@lid`, `<id>@g.us` group, `<id>@newsletter`), e.g. the `key.remoteJid` of a message.',
  examples: ['5511999990000', '120363025246125888@g.us'],
});

/** A message `key.id`. */
export const MessageId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9_.:-]+$',
  description: 'The message `key.id`, from a MESSAGE or SEND_MESSAGE event, a send reply or GET /message/find.',
  examples: ['3EB0C431C26A1916D5A8'],
});

export const PagingQuery = Type.Object(
  {
    offset: Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0, description: 'Items to skip.' }),
    limit: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: 'Items per page (max 500).' }),
  },
  { additionalProperties: false },
);

export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    total: Type.Integer(),
    offset: Type.Integer(),
    limit: Type.Integer(),
  });
}

/** An instance's `instanceId` (a UUID given at creation). */
export const InstanceId = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'The instanceId given at creation.',
  examples: ['7c9e6679-7425-40de-944b-e07fc1f90ae7'],
});

export const InstanceIdParams = Type.Object({ instance_id: InstanceId }, { additionalProperties: false });

export const ADMIN: { [scheme: string]: string[] }[] = [{ apikey: [] }, { bearer: [] }];
export const INSTANCE = [{ apikey: [] }];

/** A paged query with more fields: `offset`/`limit` plus the route's own filters. */
export function PagedQuery<P extends Record<string, TSchema>>(properties: P) {
  return Type.Object({ ...PagingQuery.properties, ...properties }, { additionalProperties: false });
}

/**
 * A body schema documented one way and validated another: a multipart form is shown as it is on
 * the wire (text fields, binary files) and validated as the JSON body it is turned into before
 * validation (sending/multipart.ts). The validator compiler (http/app.ts) follows the link.
 */
const VALIDATED_AS = Symbol('validatedAs');

export function validatedAs<T extends object>(documented: T, validated: TSchema): T {
  return Object.assign(documented, { [VALIDATED_AS]: validated });
}

/** The schema a validator is compiled from: the linked one of `validatedAs`, else the schema itself. */
export function schemaToValidate(schema: unknown): unknown {
  return (schema as { [VALIDATED_AS]?: TSchema } | null)?.[VALIDATED_AS] ?? schema;
}
