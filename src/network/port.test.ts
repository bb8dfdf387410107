import { describe, expect, it } from 'vitest';
import { isGroupJid, isNewsletterJid } from './port.js';

describe('JID kinds', () => {
  it('knows a group by its whole address, old (creator-time) and new form', () => {
    expect(isGroupJid('120363000000000001@g.us')).toBe(true);
    expect(isGroupJid('5511999990000-1600000000@g.us')).toBe(true);
    for (const other of [
      '5511999990000@s.whatsapp.net',
      '120363000000000001@newsletter',
      'abc@g.us',
      '@g.us',
      '1@g.us ',
      '1@g.usx',
      '1-@g.us',
    ])
      expect(isGroupJid(other)).toBe(false);
  });

  it('knows a channel by its whole address', () => {
    expect(isNewsletterJid('120363000000000001@newsletter')).toBe(true);
    for (const other of ['120363000000000001@g.us', 'x1@newsletter', '@newsletter', '1@newsletters'])
      expect(isNewsletterJid(other)).toBe(false);
  });
});
