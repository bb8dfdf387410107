import { randomBytes } from 'node:crypto';
import { Curve } from 'baileys';
import { describe, expect, it } from 'vitest';
import { checkSignaturesNatively, verifyXEdDSA } from './signatures.js';

describe('XEdDSA signatures checked by Node (what Baileys verifies at login and pairing)', () => {
  const keys = Array.from({ length: 40 }, () => Curve.generateKeyPair());

  it('accepts what Signal signs, with or without the key type byte', () => {
    for (const [i, key] of keys.entries()) {
      const message = randomBytes(1 + (i % 7) * 50);
      const signature = Curve.sign(key.private, message);
      expect(verifyXEdDSA(key.public, message, signature)).toBe(true);
      expect(verifyXEdDSA(Buffer.concat([Buffer.from([5]), key.public]), message, signature)).toBe(true);
    }
  });

  it('refuses another message, another key, any changed bit of the signature, and malformed input', () => {
    for (const [i, key] of keys.entries()) {
      const message = randomBytes(64);
      const signature = Buffer.from(Curve.sign(key.private, message));
      const other = Buffer.from(message);
      other[i % 64]! ^= 1;
      expect(verifyXEdDSA(key.public, other, signature)).toBe(false);
      expect(verifyXEdDSA(keys[(i + 1) % keys.length]!.public, message, signature)).toBe(false);
      // Every byte of R and s, and the sign bit the XEdDSA signature carries in its top bit.
      for (const position of [0, 17, 31, 32, 50, 63]) {
        const changed = Buffer.from(signature);
        changed[position]! ^= position === 63 ? 0x80 : 0x01;
        expect(verifyXEdDSA(key.public, message, changed), `byte ${position}`).toBe(false);
      }
      expect(verifyXEdDSA(key.public, message, randomBytes(64))).toBe(false);
    }
    const key = keys[0]!;
    const signature = Curve.sign(key.private, Buffer.from('x'));
    expect(verifyXEdDSA(key.public.subarray(1), Buffer.from('x'), signature)).toBe(false);
    expect(verifyXEdDSA(key.public, Buffer.from('x'), signature.subarray(1))).toBe(false);
    expect(verifyXEdDSA(key.public, Buffer.alloc(0), signature)).toBe(false);
  });

  it("makes Baileys' Curve.verify a real check: it used to accept any well-formed signature", () => {
    const key = keys[0]!;
    const message = Buffer.from('certificate details');
    const signature = Curve.sign(key.private, message);
    const forged = randomBytes(64);
    // Baileys' own verify answers true for a forged signature (libsignal returns false, nothing throws).
    expect(Curve.verify(key.public, message, forged)).toBe(true);
    checkSignaturesNatively();
    expect(Curve.verify(key.public, message, forged)).toBe(false);
    expect(Curve.verify(key.public, message, signature)).toBe(true);
    checkSignaturesNatively(); // idempotent
    expect(Curve.verify(key.public, message, signature)).toBe(true);
  });
});
