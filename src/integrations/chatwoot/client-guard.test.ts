/** The Chatwoot client's connect-time address check: a base URL set with an instance token cannot be rebound to a private address. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicOnlyLookup } from '../../media/address.js';
import { ChatwootApiError, ChatwootClient } from './client.js';

describe('ChatwootClient connections', () => {
  let server: http.Server;
  let port = 0;
  let hits = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ payload: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  // A name that resolves to this loopback server, as a rebound name would after the set-time check.
  const resolveToLoopback = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
  const target = () => ({ baseUrl: `http://chatwoot.example:${port}`, accountId: 1, apiToken: 't' });

  it('refuses at connect time a name that now resolves to a private address, and never reaches it', async () => {
    const guarded = new Agent({ connect: { lookup: publicOnlyLookup(undefined, resolveToLoopback) } });
    const before = hits;
    const failure = await new ChatwootClient(target(), 'test', guarded).listInboxes().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ChatwootApiError);
    expect((failure as ChatwootApiError).status).toBeNull();
    expect(hits).toBe(before);
    await guarded.close();
  });

  it('connects through the same dispatcher when the resolved address is allowed', async () => {
    const allowing = new Agent({ connect: { lookup: publicOnlyLookup(() => true, resolveToLoopback) } });
    const before = hits;
    await expect(new ChatwootClient(target(), 'test', allowing).listInboxes()).resolves.toEqual([]);
    expect(hits).toBe(before + 1);
    await allowing.close();
  });
});
