/** Helpers for the chats/groups/users/labels/newsletters/communities/calls end-to-end tests. */
import { expect } from 'vitest';
import type { ApiResponse, TestGateway, TestInstance } from './gateway.js';

/** A 1x1 PNG. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** The first bytes of a JPEG file (the gateway checks the signature; the sandbox stores the bytes). */
export const JPEG_DATA_URL = `data:image/jpeg;base64,${Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 0xff, 0xd9]).toString('base64')}`;

/** GET and POST under /api/v1 as an instance; `gateway` is read at call time (it is started in beforeAll). */
export function instanceCalls(gateway: () => TestGateway) {
  return {
    get: (who: TestInstance, route: string) => gateway().api('GET', `/api/v1${route}`, { key: who.token }),
    post: (who: TestInstance, route: string, body?: unknown) => gateway().api('POST', `/api/v1${route}`, { key: who.token, body }),
  };
}

/** Asserts the status (showing the body when it differs) and returns the body. */
export function expectStatus<T = any>(response: ApiResponse<T>, status: number): T {
  if (response.status !== status) {
    throw new Error(`expected HTTP ${status}, got ${response.status}: ${JSON.stringify(response.body)}`);
  }
  return response.body;
}

/** Asserts an error reply: status and a message matching `pattern`. */
export function expectError(response: ApiResponse, status: number, pattern: RegExp): void {
  expect({ status: response.status, error: response.body?.error }).toEqual({ status, error: expect.stringMatching(pattern) });
}

/** A virtual contact sends a text to a sandbox instance number. */
export async function contactSays(gw: TestGateway, from: string, to: string, text: string): Promise<{ key: { id: string } }> {
  return expectStatus(await gw.api('POST', '/api/v1/sandbox/messages', { key: gw.adminKey, body: { from, to, text } }), 200);
}

/** Creates or updates a sandbox account (virtual contact or instance number). */
export async function sandboxAccount(gw: TestGateway, body: Record<string, unknown>): Promise<any> {
  return expectStatus(await gw.api('POST', '/api/v1/sandbox/accounts', { key: gw.adminKey, body }), 200);
}

/** The text of a message payload. */
export function textOf(message: any): string | undefined {
  return message?.conversation ?? message?.extendedTextMessage?.text;
}
