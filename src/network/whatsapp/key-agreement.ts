/**
 * Baileys agrees three X25519 keys at every login (the Noise handshake: the login's ephemeral key
 * twice, the device's noise key once) with `Curve.sharedKey`, which goes through libsignal: each
 * private key is imported from PKCS#8 DER, and OpenSSL 3's decoders make that ~0.5 ms a key. That
 * was ~2.6 ms of CPU per login, 4 % of a resume's whole cost.
 *
 * `agreeKeysNatively()` makes `Curve.sharedKey` import a private key as JWK (~0.05 ms; the same raw
 * key for OpenSSL, so the same shared secret) when its public half is known (`rememberKeyPair`: the
 * noise key of the creds loaded from the database), and from DER as libsignal does otherwise (the
 * login's ephemeral key). The pairs are held weakly, by the private key's buffer. Installed by the
 * driver before its first socket; idempotent.
 *
 * `Curve.generateKeyPair` is left as it is: wrapped to remember every pair it makes (the ephemeral
 * key's two agreements), the measured gateway of `storage_scale` answered PostgreSQL reads at half the
 * rate (bench/README, fourteenth run), a cause not found yet.
 */
import { createPrivateKey, createPublicKey, diffieHellman, type KeyObject } from 'node:crypto';
import { Curve } from 'baileys';

/** DER prefix of an X25519 PKCS#8 private key; the 32 key bytes follow (libsignal's). */
const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** The public half of each key pair known, by its private key's buffer. */
const publicHalf = new WeakMap<Uint8Array, Uint8Array>();

const base64url = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');

/** Lets `Curve.sharedKey` import this pair's private key the fast way (a pair loaded from storage). */
export function rememberKeyPair(pair: { private: Uint8Array; public: Uint8Array } | undefined): void {
  if (pair?.private && pair.public?.length === 32) publicHalf.set(pair.private, pair.public);
}

/** Whether `Curve.sharedKey` knows this private key's pair (tests, diagnostics). */
export function isKnownPair(privateKey: Uint8Array): boolean {
  return publicHalf.has(privateKey);
}

function privateKeyOf(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new Error('Invalid private key');
  const pub = publicHalf.get(raw);
  if (pub) return createPrivateKey({ key: { kty: 'OKP', crv: 'X25519', d: base64url(raw), x: base64url(pub) }, format: 'jwk' });
  return createPrivateKey({ key: Buffer.concat([X25519_PKCS8, raw]), format: 'der', type: 'pkcs8' });
}

/** X25519 of a private key and a public key (which may carry Signal's 0x05 type byte), as libsignal answers. */
export function sharedKey(privateKey: Uint8Array, publicKey: Uint8Array): Buffer<ArrayBuffer> {
  const key = publicKey.length === 33 && publicKey[0] === 5 ? publicKey.subarray(1) : publicKey;
  if (key.length !== 32) throw new Error('Invalid public key');
  const peer = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: base64url(key) }, format: 'jwk' });
  return diffieHellman({ privateKey: privateKeyOf(privateKey), publicKey: peer });
}

let installed = false;

/** Makes Baileys' `Curve.sharedKey` import known keys from JWK (see above). */
export function agreeKeysNatively(): void {
  if (installed) return;
  installed = true;
  Curve.sharedKey = sharedKey;
}
