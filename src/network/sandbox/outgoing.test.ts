import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hiddenClassChanges } from '../../../test/support/hidden-class.js';
import { buildOutgoing } from './outgoing.js';

describe('buildOutgoing', () => {
  it('builds every send of one kind with one hidden class (no new class per send)', () => {
    // The check itself sees objects of two shapes (whatever the Node version).
    expect(hiddenClassChanges((i) => (i % 2 === 0 ? { remoteJid: 'a', typing: i } : { typing: i, remoteJid: 'a' }))).toBeGreaterThan(50);

    const text = { kind: 'text', to: '5511900000000', text: 'hello', linkPreview: false } as const;
    expect(hiddenClassChanges(() => buildOutgoing(text, '5511999990000', 1_800_000_000))).toBe(0);
    const data = Buffer.from('x');
    const media = { data, mimetype: 'image/png', sha256: createHash('sha256').update(data).digest('hex'), width: 1, height: 1 };
    const image = { kind: 'media', to: '5511900000000', mediaType: 'image', media } as const;
    expect(hiddenClassChanges(() => buildOutgoing(image, '5511999990000', 1_800_000_000))).toBe(0);
  });

  it('keeps the fields of a built message', () => {
    const built = buildOutgoing({ kind: 'text', to: '5511900000000', text: 'hello', linkPreview: false } as const, '5511999990000', 1);
    expect(built).toEqual({
      remoteJid: '5511900000000@s.whatsapp.net',
      recipients: ['5511900000000'],
      content: { conversation: 'hello' },
      typing: 'composing',
    });
    expect('media' in built).toBe(false);
  });
});
