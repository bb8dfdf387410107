import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { amountInCents, normalisePixKey } from './pix.js';

describe('Pix keys', () => {
  it('verifies CPF check digits', () => {
    for (const cpf of ['52998224725', '111.444.777-35', '935.411.347-80']) expect(normalisePixKey('CPF', cpf)).toBe(cpf.replace(/\D/g, ''));
    for (const cpf of ['52998224724', '11144477736', '00000000000', '99999999999'])
      expect(() => normalisePixKey('CPF', cpf), cpf).toThrow(AppError);
  });

  it('verifies CNPJ check digits, numeric and alphanumeric', () => {
    expect(normalisePixKey('CNPJ', '11.222.333/0001-81')).toBe('11222333000181');
    expect(normalisePixKey('CNPJ', '12.abc.345/01de-35')).toBe('12ABC34501DE35');
    for (const cnpj of ['11222333000182', '12ABC34501DE36', '00000000000000', '1122233300018'])
      expect(() => normalisePixKey('CNPJ', cnpj), cnpj).toThrow(/CNPJ/);
  });

  it('normalises phone, e-mail and random keys', () => {
    expect(normalisePixKey('PHONE', '5511987654321')).toBe('+5511987654321');
    expect(normalisePixKey('PHONE', '+55 21 3456-7890')).toBe('+552134567890');
    expect(() => normalisePixKey('PHONE', '+5501987654321')).toThrow(/phone key/);
    expect(normalisePixKey('EMAIL', ' Ana@Example.COM ')).toBe('ana@example.com');
    expect(() => normalisePixKey('EMAIL', `${'a'.repeat(70)}@example.com`)).toThrow(/at most 77/);
    expect(normalisePixKey('EVP', '123E4567-E89B-42D3-A456-426614174000')).toBe('123e4567-e89b-42d3-a456-426614174000');
  });

  it('takes amounts with at most two decimals', () => {
    expect(amountInCents(10.5)).toBe(1050);
    expect(amountInCents(0.01)).toBe(1);
    expect(amountInCents(19.99)).toBe(1999);
    expect(() => amountInCents(0.001)).toThrow(/2 decimal places/);
  });
});
