/**
 * Baileys checks two signatures with `Curve.verify`: the Noise certificate chain of the server at
 * every login (two checks) and the phone's account signature at pairing. Its `verify` wraps
 * libsignal's `verifySignature`, which returns false for a bad signature instead of throwing, and
 * answers true whenever nothing threw: every well-formed signature passed, so neither check checked
 * anything. It also costs ~10 ms of pure-JS curve arithmetic per call, ~20 ms of CPU per login.
 *
 * `checkSignaturesNatively()` makes `Curve.verify` a real XEdDSA verification (Signal's scheme: a
 * Curve25519 key, checked as the Ed25519 key it maps to) done by Node's crypto: the Montgomery u of
 * the key becomes the Edwards y = (u − 1) / (u + 1), the signature's top bit is the sign of x, and
 * the rest is a standard Ed25519 verification. whatsmeow makes the same checks against the same
 * root key. Installed by the driver before its first socket; idempotent.
 */
import { createPublicKey, verify } from 'node:crypto';
import { Curve } from 'baileys';

const P = 2n ** 255n - 19n;

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i -= 1) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

function modPow(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base % P;
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}

/** The Ed25519 public key (without its sign bit) a Curve25519 public key maps to. */
function edwardsOf(montgomery: Uint8Array): Buffer {
  const u = littleEndian(montgomery) & ((1n << 255n) - 1n);
  // (u + 1) has no inverse only for u = −1: then y = 0, as libsignal computes it.
  const y = (((u - 1n + P) % P) * modPow(u + 1n, P - 2n)) % P;
  const out = Buffer.alloc(32);
  let rest = y;
  for (let i = 0; i < 32; i += 1) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}

/** An XEdDSA signature check; `publicKey` may carry Signal's 0x05 type byte. */
export function verifyXEdDSA(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  const key = publicKey.length === 33 && publicKey[0] === 5 ? publicKey.subarray(1) : publicKey;
  if (key.length !== 32 || signature.length !== 64 || !message || message.length === 0) return false;
  const edwards = edwardsOf(key);
  edwards[31]! |= signature[63]! & 0x80;
  const ed25519Signature = Buffer.from(signature);
  ed25519Signature[63]! &= 0x7f;
  try {
    // JWK, not DER: OpenSSL 3's DER decoders cost ~0.1 ms a key (key-agreement.ts).
    const keyObject = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: edwards.toString('base64url') }, format: 'jwk' });
    return verify(null, message, keyObject, ed25519Signature);
  } catch {
    return false; // not a point on the curve
  }
}

let installed = false;

/** Makes Baileys' `Curve.verify` a real check (see above). */
export function checkSignaturesNatively(): void {
  if (installed) return;
  installed = true;
  Curve.verify = (publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array) => verifyXEdDSA(publicKey, message, signature);
}
