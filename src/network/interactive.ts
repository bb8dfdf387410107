/**
 * The interactive kinds (buttons, list, pix, carousel) as the network carries them: native-flow
 * `interactiveMessage`s inside `viewOnceMessage`, as WhatsApp's business clients send them. One
 * builder for both drivers, so a message sent on the sandbox has the shape the real network delivers.
 * Plain JSON: the WhatsApp driver hands it to the protocol library as it is.
 */
import { randomBytes } from 'node:crypto';
import type { ListSection, MessageButton, PixKeyType } from './port.js';

export type Json = Record<string, unknown>;

/** An image or video header: `{ imageMessage }` or `{ videoMessage }` as the driver uploaded or stored it. */
export type HeaderMedia = Json;

export function nativeButton(button: MessageButton): { name: string; buttonParamsJson: string } {
  switch (button.type) {
    case 'reply':
      return { name: 'quick_reply', buttonParamsJson: JSON.stringify({ display_text: button.text, id: button.id }) };
    case 'url':
      return {
        name: 'cta_url',
        buttonParamsJson: JSON.stringify({ display_text: button.text, url: button.url, merchant_url: button.url }),
      };
    case 'call':
      return { name: 'cta_call', buttonParamsJson: JSON.stringify({ display_text: button.text, phone_number: `+${button.phoneNumber}` }) };
    case 'copy':
      return { name: 'cta_copy', buttonParamsJson: JSON.stringify({ display_text: button.text, id: button.code, copy_code: button.code }) };
  }
}

/** Wraps an interactive message the way business clients send it. */
export function interactiveEnvelope(interactive: Json): Json {
  return {
    viewOnceMessage: {
      message: {
        messageContextInfo: { deviceListMetadata: {}, deviceListMetadataVersion: 2 },
        interactiveMessage: interactive,
      },
    },
  };
}

function flow(buttons: { name: string; buttonParamsJson: string }[]): Json {
  return { buttons, messageParamsJson: '' };
}

const footerOf = (footer?: string): Json => (footer ? { footer: { text: footer } } : {});

export function buttonsMessage(input: {
  title?: string;
  text: string;
  footer?: string;
  buttons: MessageButton[];
  headerMedia?: HeaderMedia;
}): Json {
  const header = input.headerMedia
    ? { header: { ...(input.title ? { title: input.title } : {}), hasMediaAttachment: true, ...input.headerMedia } }
    : input.title
      ? { header: { title: input.title, hasMediaAttachment: false } }
      : {};
  return interactiveEnvelope({
    ...header,
    body: { text: input.text },
    ...footerOf(input.footer),
    nativeFlowMessage: flow(input.buttons.map(nativeButton)),
  });
}

/** A list menu as a native-flow `single_select` button (the legacy `listMessage` no longer renders). */
export function listMessage(input: { title?: string; text: string; footer?: string; buttonText: string; sections: ListSection[] }): Json {
  const params = {
    title: input.buttonText,
    sections: input.sections.map((section) => ({
      title: section.title,
      rows: section.rows.map((row) => ({ id: row.id, title: row.title, ...(row.description ? { description: row.description } : {}) })),
    })),
  };
  return interactiveEnvelope({
    ...(input.title ? { header: { title: input.title, hasMediaAttachment: false } } : {}),
    body: { text: input.text },
    ...footerOf(input.footer),
    nativeFlowMessage: flow([{ name: 'single_select', buttonParamsJson: JSON.stringify(params) }]),
  });
}

/** A Brazilian instant-payment (pix) key as the `payment_info` button (amount in centavos; 0 lets the payer choose). */
export function pixMessage(input: { merchantName: string; key: string; keyType: PixKeyType; amountCents?: number; text?: string }): Json {
  const amount = { value: input.amountCents ?? 0, offset: 100 };
  const params = {
    currency: 'BRL',
    total_amount: amount,
    reference_id: `WG${randomBytes(5).toString('hex').toUpperCase()}`,
    type: 'physical-goods',
    order: { status: 'pending', subtotal: amount, order_type: 'ORDER', items: [] },
    payment_settings: [
      { type: 'pix_static_code', pix_static_code: { merchant_name: input.merchantName, key: input.key, key_type: input.keyType } },
    ],
    share_payment_status: false,
  };
  return interactiveEnvelope({
    body: { text: input.text ?? '' },
    nativeFlowMessage: flow([{ name: 'payment_info', buttonParamsJson: JSON.stringify(params) }]),
  });
}

export interface CarouselCardContent {
  media: HeaderMedia;
  text: string;
  footer?: string;
  buttons: MessageButton[];
}

export function carouselMessage(input: { text: string; footer?: string; cards: CarouselCardContent[] }): Json {
  return interactiveEnvelope({
    body: { text: input.text },
    ...footerOf(input.footer),
    carouselMessage: {
      messageVersion: 1,
      cards: input.cards.map((card) => ({
        header: { hasMediaAttachment: true, ...card.media },
        body: { text: card.text },
        ...footerOf(card.footer),
        nativeFlowMessage: flow(card.buttons.map(nativeButton)),
      })),
    },
  });
}
