import { describe, expect, it } from 'vitest';
import { errors, refusal } from './errors.js';

describe('AppError', () => {
  it('carries no stack frames for a 4xx (the caller is at fault) and keeps them for a 5xx', () => {
    const refused = errors.invalidApiKey();
    expect(refused.status).toBe(401);
    expect(refused.stack).toBe('AppError: invalid api key');

    const failed = errors.standby();
    expect(failed.status).toBe(503);
    expect(failed.stack).toMatch(/\n\s+at /);
    expect(errors.internal('broken').stack).toMatch(/\n\s+at .*errors\.test\.ts/);
  });

  it('leaves the process stack trace limit as it found it', () => {
    const before = Error.stackTraceLimit;
    errors.invalidApiKey();
    errors.standby();
    expect(refusal('body is invalid').stack).toBe('Error: body is invalid');
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('plain').stack).toMatch(/\n\s+at /);
  });
});
