/**
 * Pix keys (Brazil's instant payments): each key type has its own form, checked and normalised the
 * way the Central Bank's directory (DICT) stores it. CPF and CNPJ check digits are verified; CNPJ
 * accepts the alphanumeric form introduced in 2026 (letters in the first 12 positions).
 */
import { errors } from '../errors.js';
import type { PixKeyType } from '../network/port.js';

/** Pix keys are at most 77 characters (the e-mail limit in DICT). */
export const PIX_KEY_MAX = 77;
/** The merchant name of a Pix payment code is at most 25 characters. */
export const PIX_MERCHANT_NAME_MAX = 25;

function cpfValid(digits: string): boolean {
  if (!/^\d{11}$/.test(digits) || /^(\d)\1{10}$/.test(digits)) return false;
  const checkDigit = (length: number) => {
    let sum = 0;
    for (let i = 0; i < length; i += 1) sum += Number(digits[i]) * (length + 1 - i);
    const rest = (sum * 10) % 11;
    return rest === 10 ? 0 : rest;
  };
  return checkDigit(9) === Number(digits[9]) && checkDigit(10) === Number(digits[10]);
}

function cnpjValid(value: string): boolean {
  if (!/^[0-9A-Z]{12}\d{2}$/.test(value) || /^(\d)\1{13}$/.test(value)) return false;
  // Each character counts as its code minus 48: digits keep their value, A is 17, B 18, ...
  const checkDigit = (length: number) => {
    let sum = 0;
    for (let i = 0; i < length; i += 1) {
      const weight = ((length - 1 - i) % 8) + 2;
      sum += (value.charCodeAt(i) - 48) * weight;
    }
    const rest = sum % 11;
    return rest < 2 ? 0 : 11 - rest;
  };
  return checkDigit(12) === Number(value[12]) && checkDigit(13) === Number(value[13]);
}

/** The key as DICT stores it, or a 400 naming what is wrong. */
export function normalisePixKey(keyType: PixKeyType, raw: string): string {
  const key = raw.trim();
  switch (keyType) {
    case 'CPF': {
      const digits = key.replace(/[.\-\s]/g, '');
      if (!/^\d{11}$/.test(digits)) throw errors.badRequest('key: a CPF has 11 digits (dots and dash allowed)');
      if (!cpfValid(digits)) throw errors.badRequest('key: not a valid CPF (check digits do not match)');
      return digits;
    }
    case 'CNPJ': {
      const value = key.replace(/[.\-/\s]/g, '').toUpperCase();
      if (!/^[0-9A-Z]{12}\d{2}$/.test(value)) {
        throw errors.badRequest('key: a CNPJ has 14 characters: 12 digits or letters, then 2 check digits (dots, slash and dash allowed)');
      }
      if (!cnpjValid(value)) throw errors.badRequest('key: not a valid CNPJ (check digits do not match)');
      return value;
    }
    case 'PHONE': {
      const compact = key.replace(/[\s()-]/g, '');
      const match = /^\+?55([1-9]{2})(9\d{8}|[2-5]\d{7})$/.exec(compact);
      if (!match) throw errors.badRequest('key: a phone key is +55, a 2-digit area code and the number, e.g. +5511987654321');
      return `+55${match[1]}${match[2]}`;
    }
    case 'EMAIL': {
      const email = key.toLowerCase();
      if (email.length > PIX_KEY_MAX || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) {
        throw errors.badRequest(`key: not a valid e-mail address of at most ${PIX_KEY_MAX} characters`);
      }
      return email;
    }
    case 'EVP': {
      const evp = key.toLowerCase();
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(evp)) {
        throw errors.badRequest('key: a random (EVP) key is a UUID, e.g. 123e4567-e89b-42d3-a456-426614174000');
      }
      return evp;
    }
  }
}

/** An amount in reais with at most 2 decimals, as centavos. */
export function amountInCents(amount: number): number {
  const cents = Math.round(amount * 100);
  if (Math.abs(amount * 100 - cents) > 1e-6) throw errors.badRequest('amount: at most 2 decimal places (centavos)');
  if (cents < 1) throw errors.badRequest('amount must be at least 0.01');
  return cents;
}
