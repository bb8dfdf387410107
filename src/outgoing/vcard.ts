/**
 * vCard 3.0 text for contact messages, as WhatsApp clients read it: `TEL` lines carry `waid=<digits>`
 * so the card links to the contact's WhatsApp account. Every text value is escaped (RFC 2426 §4:
 * backslash, comma, semicolon and newline), so a name cannot inject lines into the card.
 */
import type { ContactCard } from '../network/port.js';

export const PHONE_LABELS = ['CELL', 'WORK', 'HOME', 'MAIN', 'OTHER'] as const;
export type PhoneLabel = (typeof PHONE_LABELS)[number];

export interface ContactInput {
  fullName: string;
  organization?: string;
  title?: string;
  phones: { number: string; label?: PhoneLabel }[];
  emails?: string[];
  urls?: string[];
  note?: string;
}

export function escapeVCardText(value: string): string {
  return value.replace(/\r\n?/g, '\n').replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/,/g, '\\,').replace(/;/g, '\\;');
}

export function buildVCard(contact: ContactInput): string {
  const lines = ['BEGIN:VCARD', 'VERSION:3.0', `N:;${escapeVCardText(contact.fullName)};;;`, `FN:${escapeVCardText(contact.fullName)}`];
  if (contact.organization) lines.push(`ORG:${escapeVCardText(contact.organization)}`);
  if (contact.title) lines.push(`TITLE:${escapeVCardText(contact.title)}`);
  for (const phone of contact.phones) {
    const label = phone.label ?? 'CELL';
    // Digits only (schema-checked), so nothing in a TEL line needs escaping.
    lines.push(`TEL;type=${label};type=VOICE;waid=${phone.number}:+${phone.number}`);
  }
  for (const email of contact.emails ?? []) lines.push(`EMAIL;type=INTERNET:${escapeVCardText(email)}`);
  for (const url of contact.urls ?? []) lines.push(`URL:${escapeVCardText(url)}`);
  if (contact.note) lines.push(`NOTE:${escapeVCardText(contact.note)}`);
  lines.push('END:VCARD');
  return lines.join('\n');
}

export function contactCards(contacts: ContactInput[]): ContactCard[] {
  return contacts.map((contact) => ({ displayName: contact.fullName, vcard: buildVCard(contact) }));
}
