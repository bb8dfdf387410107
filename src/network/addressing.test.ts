/** The one phone-number rule and chat-id normaliser every feature and both drivers use. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { chatJidOf, isPhoneNumber, phoneJid } from './addressing.js';
import { recipientJid } from './whatsapp/addresses.js';

describe('phone numbers: E.164 without "+", 7 to 15 digits', () => {
  it('takes 7 to 15 digits and nothing else', () => {
    for (const ok of ['1234567', '5511999990000', '123456789012345']) expect(isPhoneNumber(ok), ok).toBe(true);
    for (const bad of ['123456', '1234567890123456', '+5511999990000', '55 11 99999', '', '55119999a000'])
      expect(isPhoneNumber(bad), bad).toBe(false);
    expect(phoneJid('5511999990000')).toBe('5511999990000@s.whatsapp.net');
    expect(() => phoneJid('12345')).toThrow(AppError);
  });

  it('the WhatsApp driver refuses the same numbers as the API (it took 5 to 20 digits before)', () => {
    expect(recipientJid('5511999990000')).toBe('5511999990000@s.whatsapp.net');
    expect(recipientJid('5511999990000:3@s.whatsapp.net')).toBe('5511999990000@s.whatsapp.net');
    for (const bad of ['12345', '1234567890123456789', '12345@s.whatsapp.net']) {
      expect(() => recipientJid(bad), bad).toThrow(expect.objectContaining({ status: 400, code: 'bad_request' }));
    }
  });
});

describe('chat ids', () => {
  it('numbers and person JIDs (device suffix dropped) become the person JID; LID, group and newsletter JIDs stay', () => {
    expect(chatJidOf('5511999990000')).toBe('5511999990000@s.whatsapp.net');
    expect(chatJidOf('5511999990000:12@s.whatsapp.net')).toBe('5511999990000@s.whatsapp.net');
    expect(chatJidOf('200000000000044@lid')).toBe('200000000000044@lid');
    expect(chatJidOf('120363012345678901@g.us')).toBe('120363012345678901@g.us');
    expect(chatJidOf('5511999990000-1600000000@g.us')).toBe('5511999990000-1600000000@g.us');
    expect(chatJidOf('120363012345678901@newsletter')).toBe('120363012345678901@newsletter');
  });

  it('anything else is a 400 bad_request naming the accepted forms', () => {
    for (const bad of ['123', 'abc@g.us', 'status@broadcast', '5511999990000@c.us', '']) {
      expect(() => chatJidOf(bad), bad).toThrow(
        expect.objectContaining({ status: 400, code: 'bad_request', message: expect.stringMatching(/not a chat id/) }),
      );
    }
  });
});
