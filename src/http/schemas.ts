/** Schemas shared by every feature: error replies, paging, phone numbers. */
import { Type, type TSchema } from 'typebox';

export const ErrorReply = Type.Object(
  {
    error: Type.String({ description: 'What went wrong, in plain words.' }),
    details: Type.Optional(Type.Array(Type.String(), { description: 'Every validation problem found.' })),
    retryAfter: Type.Optional(Type.Number({ description: 'Seconds to wait (429 only).' })),
  },
  { additionalProperties: true, description: 'Every error has this shape.' },
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
  429: 'Rate limit exceeded: `{"error":"rate limit exceeded","retryAfter":<seconds>}` and a `Retry-After` header.',
  501: 'The instance network driver does not support this operation yet.',
  502: 'The network refused or failed the operation.',
};

/** The documented error replies of a route; 400, 401 and 429 apply to nearly all of them. */
export function errorResponses(...codes: number[]): Record<number, TSchema> {
  const all = new Set([400, 429, ...codes]);
  const out: Record<number, TSchema> = {};
  for (const code of [...all].sort()) out[code] = { ...ErrorReply, description: ERROR_TEXT[code] ?? 'Error.' };
  return out;
}

export const PhoneNumber = Type.String({
  pattern: '^[0-9]{7,15}$',
  description: 'Digits only, with country code, 7 to 15 digits (E.164 without "+"). Normalised to `<number>@s.whatsapp.net`.',
  examples: ['5511999990000'],
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

export const InstanceIdParams = Type.Object(
  { instance_id: Type.String({ minLength: 1, maxLength: 64, description: 'The instanceId given at creation.' }) },
  { additionalProperties: false },
);

export const ADMIN: { [scheme: string]: string[] }[] = [{ apikey: [] }, { bearer: [] }];
export const INSTANCE = [{ apikey: [] }];

/** A paged query with more fields: `offset`/`limit` plus the route's own filters. */
export function PagedQuery<P extends Record<string, TSchema>>(properties: P) {
  return Type.Object({ ...PagingQuery.properties, ...properties }, { additionalProperties: false });
}
