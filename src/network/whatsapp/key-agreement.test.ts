import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Curve } from 'baileys';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../clock.js';
import { authStateFor, WhatsAppAuthStore } from './auth-store.js';
import { TtlCache } from './caches.js';
import { storageWithInstance } from './fixtures/harness.js';
import { agreeKeysNatively, isKnownPair, rememberKeyPair, sharedKey } from './key-agreement.js';

describe("X25519 agreement as Baileys' Noise handshake makes it", () => {
  // Baileys' own (libsignal's), taken before the swap.
  const libsignalSharedKey = Curve.sharedKey;
  const libsignalKeyPair = Curve.generateKeyPair;

  it('answers what libsignal answers: known and unknown pairs, any 32 private bytes, keys with or without the type byte', () => {
    for (let i = 0; i < 30; i += 1) {
      const mine = libsignalKeyPair();
      const peer = libsignalKeyPair();
      const expected = libsignalSharedKey(mine.private, peer.public);
      // Unknown pair: Baileys' own agreement.
      expect(isKnownPair(mine.private)).toBe(false);
      expect(sharedKey(mine.private, peer.public).equals(expected)).toBe(true);
      // Known pair: imported from JWK.
      rememberKeyPair(mine);
      expect(isKnownPair(mine.private)).toBe(true);
      expect(sharedKey(mine.private, peer.public).equals(expected)).toBe(true);
      expect(sharedKey(mine.private, Buffer.concat([Buffer.from([5]), peer.public])).equals(expected)).toBe(true);
      // Both sides agree.
      expect(sharedKey(peer.private, mine.public).equals(expected)).toBe(true);
      // Raw bytes never clamped by anyone (X25519 clamps them itself).
      const raw = randomBytes(32);
      expect(sharedKey(raw, peer.public).equals(libsignalSharedKey(raw, peer.public))).toBe(true);
    }
  });

  it('refuses malformed keys as libsignal does', () => {
    const pair = libsignalKeyPair();
    rememberKeyPair(pair);
    expect(() => sharedKey(pair.private, pair.public.subarray(1))).toThrow(/public key/);
    expect(() => sharedKey(pair.private, Buffer.concat([Buffer.from([7]), pair.public]))).toThrow(/public key/);
    expect(() => sharedKey(pair.private.subarray(1), pair.public)).toThrow(/private key/);
  });

  it("becomes Baileys' Curve.sharedKey; the pairs Curve.generateKeyPair makes and the creds' noise key are known", async () => {
    agreeKeysNatively();
    agreeKeysNatively(); // idempotent
    expect(Curve.sharedKey).toBe(sharedKey);
    const mine = Curve.generateKeyPair();
    const peer = Curve.generateKeyPair();
    expect(isKnownPair(mine.private)).toBe(true);
    expect(Curve.sharedKey(mine.private, peer.public).equals(libsignalSharedKey(mine.private, peer.public))).toBe(true);
    const { storage, instanceId } = await storageWithInstance(
      `sqlite:${path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wa-agree-')), 'agree.db')}`,
    );
    const store = new WhatsAppAuthStore(storage.db, systemClock);
    let state;
    try {
      // Creds saved, then loaded as a restart loads them: a new buffer, known again.
      await authStateFor(store, instanceId, new TtlCache(10, 60_000, systemClock)).then((auth) => auth.saveCreds());
      ({ state } = await authStateFor(store, instanceId, new TtlCache(10, 60_000, systemClock)));
    } finally {
      await storage.close();
    }
    expect(isKnownPair(state.creds.noiseKey.private)).toBe(true);
    expect(
      Curve.sharedKey(state.creds.noiseKey.private, peer.public).equals(libsignalSharedKey(state.creds.noiseKey.private, peer.public)),
    ).toBe(true);
  });
});
