/**
 * Baileys agrees three X25519 keys at every login (the Noise handshake: the login's ephemeral key
 * twice, the device's noise key once) with `Curve.sharedKey`, which goes through libsignal: each
 * private key is imported from PKCS#8 DER, and OpenSSL 3's decoders make that ~0.5 ms a key. That
 * was ~2.6 ms of CPU per login, 4 % of a resume's whole cost.
 *
 * `agreeKeysNatively()` makes `Curve.sharedKey` import a private key as JWK (~0.09 ms an agreement;
 * the same raw key for OpenSSL, so the same shared secret) when its public half is known: the pairs
 * `Curve.generateKeyPair` makes (the login's ephemeral key, wrapped to remember them) and the noise
 * key of the creds loaded from the database (`rememberKeyPair`). Any other key goes to Baileys' own
 * `sharedKey`, as before. The pairs are held weakly, by the private key's buffer: nothing stays alive
 * for them. Installed by the driver before its first socket; idempotent.
 */
import { createPrivateKey, createPublicKey, diffieHellman } from 'node:crypto';
import { Curve } from 'baileys';

/** Baileys' own (through libsignal), taken when this module loads: what unknown keys go to. */
const baileysSharedKey = Curve.sharedKey;

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

/** X25519 of a private key and a public key (which may carry Signal's 0x05 type byte), as libsignal answers. */
export function sharedKey(privateKey: Uint8Array, publicKey: Uint8Array): Buffer<ArrayBuffer> {
  const pub = publicHalf.get(privateKey);
  if (!pub) return baileysSharedKey(privateKey, publicKey);
  if (privateKey.length !== 32) throw new Error('Invalid private key');
  const key = publicKey.length === 33 && publicKey[0] === 5 ? publicKey.subarray(1) : publicKey;
  if (key.length !== 32) throw new Error('Invalid public key');
  const own = createPrivateKey({ key: { kty: 'OKP', crv: 'X25519', d: base64url(privateKey), x: base64url(pub) }, format: 'jwk' });
  const peer = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: base64url(key) }, format: 'jwk' });
  return diffieHellman({ privateKey: own, publicKey: peer });
}

let installed = false;

/** Makes Baileys' `Curve.sharedKey` import known keys from JWK (see above). */
export function agreeKeysNatively(): void {
  if (installed) return;
  installed = true;
  const generateKeyPair = Curve.generateKeyPair;
  Curve.generateKeyPair = () => {
    const pair = generateKeyPair();
    rememberKeyPair(pair);
    return pair;
  };
  Curve.sharedKey = sharedKey;
}
