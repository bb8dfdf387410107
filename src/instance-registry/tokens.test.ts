import { describe, expect, it } from 'vitest';
import { hashToken, KeyDigests, newInstanceToken } from './tokens.js';

describe('KeyDigests', () => {
  it('gives the same digest as hashToken, remembered for keys seen again', () => {
    const digests = new KeyDigests(10);
    const token = newInstanceToken();
    expect(digests.of(token)).toBe(hashToken(token));
    expect(digests.of(token)).toBe(hashToken(token));
    expect(digests.size).toBe(1);
  });

  it('keeps at most its limit of keys, and never a key longer than any token or admin key', () => {
    const digests = new KeyDigests(3);
    for (let i = 0; i < 50; i++) expect(digests.of(`key-${i}`)).toBe(hashToken(`key-${i}`));
    expect(digests.size).toBe(3);
    const long = 'x'.repeat(4096);
    expect(digests.of(long)).toBe(hashToken(long));
    expect(digests.size).toBe(3);
    const none = new KeyDigests(0);
    expect(none.of('key')).toBe(hashToken('key'));
    expect(none.size).toBe(0);
  });
});
