/**
 * The one rule for how API callers name people and chats, for every feature and both drivers:
 * a phone number is E.164 without "+" (7 to 15 digits with the country code, the PhoneNumber
 * schema's pattern) and becomes `<number>@s.whatsapp.net`; a chat id is such a number or a JID.
 */
import { errors } from '../errors.js';
import { isGroupJid, isNewsletterJid, jidToNumber, toJid } from './port.js';

/** The one phone-number rule (E.164: 7 to 15 digits with the country code); http/schemas.ts uses it too. */
export const PHONE_NUMBER_PATTERN = '^[0-9]{7,15}$';
const PHONE_NUMBER = new RegExp(PHONE_NUMBER_PATTERN);

export function isPhoneNumber(value: string): boolean {
  return PHONE_NUMBER.test(value);
}

/** A person's JID from a phone number; 400 otherwise. */
export function phoneJid(number: string): string {
  if (!isPhoneNumber(number)) throw errors.badRequest(`${number} is not a phone number (7 to 15 digits with country code)`);
  return toJid(number);
}

/**
 * A chat id as API callers give it, in JID form: a phone number or a person JID (a device suffix,
 * `<n>:3@s.whatsapp.net`, names the same chat), a LID (`<id>@lid`, as message keys carry it),
 * a group or a newsletter JID; 400 otherwise.
 */
export function chatJidOf(chatId: string): string {
  if (isPhoneNumber(chatId)) return toJid(chatId);
  const number = jidToNumber(chatId);
  if (number && isPhoneNumber(number)) return toJid(number);
  if (/^[0-9]{1,25}@lid$/.test(chatId) || isGroupJid(chatId) || isNewsletterJid(chatId)) return chatId;
  throw errors.badRequest(`${chatId} is not a chat id (a number, <number>@s.whatsapp.net, <id>@lid, <id>@g.us or <id>@newsletter)`);
}

/** The pattern of a person's address: a phone number, a phone JID (device suffix allowed) or a LID. */
export const PERSON_ADDRESS_PATTERN = '^([0-9]{7,15}|[0-9]{7,15}(:[0-9]+)?@s\\.whatsapp\\.net|[0-9]{1,25}(:[0-9]+)?@lid)$';

/** A person's address as either side of the phone <-> LID pair; 400 otherwise. */
export function personAddressOf(id: string): { number: string } | { lid: string } {
  if (isPhoneNumber(id)) return { number: id };
  const phone = /^([0-9]{7,15})(:[0-9]+)?@s\.whatsapp\.net$/.exec(id)?.[1];
  if (phone) return { number: phone };
  const lid = /^([0-9]{1,25})(:[0-9]+)?@lid$/.exec(id)?.[1];
  if (lid) return { lid: `${lid}@lid` };
  throw errors.badRequest(`${id} is not a person's address (a number, <number>@s.whatsapp.net or <id>@lid)`);
}
