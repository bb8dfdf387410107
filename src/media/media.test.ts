/**
 * The media fetcher's SSRF protections, against real local HTTP servers: 127.0.0.1 plays a public
 * host (through the test hook) and 127.0.0.2 a private one, so redirects into a private network
 * can be exercised; and a gateway with the default settings refuses private URLs end to end.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { MediaServer, makeSamples, type Samples } from '../../test/support/media.js';
import { AppError } from '../errors.js';
import { ipLiteral, isPublicAddress } from './address.js';
import { safeMimetype } from './resolver.js';
import { MediaFetcher } from './fetch.js';
import { sweepOrphanMedia } from './orphans.js';
import { LocalMediaStore, mediaKey } from './store.js';
import { MessageStore } from '../message-store/store.js';

async function failure(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('media types from other senders', () => {
  it('keeps well-formed ones (with parameters) and replaces anything a header cannot carry', () => {
    expect(safeMimetype('audio/ogg; codecs=opus')).toBe('audio/ogg; codecs=opus');
    expect(safeMimetype('image/jpeg')).toBe('image/jpeg');
    expect(safeMimetype('image/jpég')).toBe('application/octet-stream');
    expect(safeMimetype('text/html\r\nSet-Cookie: x=1')).toBe('application/octet-stream');
    expect(safeMimetype('not a type')).toBe('application/octet-stream');
    expect(safeMimetype(undefined)).toBe('application/octet-stream');
  });
});

describe('which addresses are public', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast, reserved and mapped forms', () => {
    for (const address of [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '192.0.2.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:10.1.2.3',
      'ff02::1',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });

  it('judges IPv6 forms that embed an IPv4 address by that address, and allows only global unicast IPv6', () => {
    // As URL hosts: [::127.0.0.1] becomes [::7f00:1], which looked like plain unicast.
    for (const host of ['[::127.0.0.1]', '[::169.254.169.254]', '[::10.0.0.1]', '[::ffff:7f00:1]', '[0:0:0:0:0:ffff:a9fe:a9fe]']) {
      const literal = ipLiteral(new URL(`http://${host}/`).hostname)!;
      expect(isPublicAddress(literal), host).toBe(false);
    }
    for (const address of [
      '::7f00:1',
      '::a9fe:a9fe',
      '2002:7f00:1::1', // 6to4 of 127.0.0.1
      '2002:a00:1::', // 6to4 of 10.0.0.1
      '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
      '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
      '64:ff9b:1::1', // local-use NAT64
      '2001::1', // Teredo
      '2001:db8::1', // documentation
      '100::1', // discard
      '4000::1', // outside 2000::/3
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
    for (const address of ['::808:808', '2002:808:808::1', '64:ff9b::808:808', '2a00:1450:4001::200e']) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});

describe('fetching media from URLs', () => {
  let publicServer: MediaServer;
  let privateServer: MediaServer;
  let samples: Samples;
  const policy = { timeoutMs: 2000, allowPrivate: false, allowHttp: true };
  // 127.0.0.1 stands in for the internet; every other address keeps the real rule.
  const hooks = {
    isPublic: (address: string) => address === '127.0.0.1' || isPublicAddress(address),
    resolve: async (hostname: string) => {
      if (hostname === 'media.example') return [{ address: '127.0.0.1', family: 4 }];
      if (hostname === 'intranet.example') return [{ address: '127.0.0.2', family: 4 }];
      if (hostname === 'split.example')
        return [
          { address: '127.0.0.1', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    },
  };
  let fetcher: MediaFetcher;

  beforeAll(async () => {
    samples = await makeSamples();
    publicServer = new MediaServer('127.0.0.1');
    privateServer = new MediaServer('127.0.0.2');
    await publicServer.start();
    await privateServer.start();
    fetcher = new MediaFetcher(policy, hooks);
  });
  afterAll(async () => {
    await fetcher?.close();
    await publicServer?.stop();
    await privateServer?.stop();
  });

  const port = (server: MediaServer) => new URL(server.origin).port;

  it('fetches from a public host by name and follows a redirect to another public URL', async () => {
    publicServer.file('/a.png', samples.png, 'image/png');
    publicServer.redirect('/moved', `http://media.example:${port(publicServer)}/a.png`);
    const got = await fetcher.fetch(`http://media.example:${port(publicServer)}/moved`, 1_000_000, 'media', 'MEDIA_MAX_IMAGE_BYTES');
    expect(got.data.equals(samples.png)).toBe(true);
    expect(got.contentType).toBe('image/png');
  });

  it('refuses a private address given literally, before connecting', async () => {
    privateServer.file('/secret', Buffer.from('secret'));
    const error = await failure(fetcher.fetch(`${privateServer.origin}/secret`, 1000, 'media', 'X'));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(
      /media\.url points to the non-public address 127\.0\.0\.2; private and loopback addresses are refused \(MEDIA_ALLOW_PRIVATE_URLS\)/,
    );
    for (const literal of ['http://[::1]/x', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]/x']) {
      expect((await failure(fetcher.fetch(literal, 1000, 'media', 'X'))).message, literal).toMatch(/non-public address/);
    }
  });

  it('refuses a host name that resolves to a private address (checked at connect time)', async () => {
    const error = await failure(fetcher.fetch(`http://intranet.example:${port(privateServer)}/secret`, 1000, 'media', 'X'));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/intranet\.example resolves to the non-public address 127\.0\.0\.2/);
    // One private address among public ones is enough to refuse.
    expect((await failure(fetcher.fetch(`http://split.example:${port(publicServer)}/a.png`, 1000, 'media', 'X'))).message).toMatch(
      /10\.0\.0\.7/,
    );
  });

  it('refuses redirects into a private network, literal or by name', async () => {
    const literal = publicServer.redirect('/to-private', `${privateServer.origin}/secret`);
    const error = await failure(fetcher.fetch(literal, 1000, 'media', 'X'));
    expect(error.status).toBe(422);
    expect(error.message).toMatch(/media\.url redirected to the non-public address 127\.0\.0\.2/);
    const named = publicServer.redirect('/to-intranet', `http://intranet.example:${port(privateServer)}/secret`);
    expect((await failure(fetcher.fetch(named, 1000, 'media', 'X'))).message).toMatch(
      /intranet\.example resolves to the non-public address/,
    );
  });

  it('gives up after 5 redirects and reports unreachable hosts', async () => {
    const loop = publicServer.redirect('/loop', '/loop');
    expect((await failure(fetcher.fetch(loop, 1000, 'media', 'X'))).message).toMatch(/redirected more than 5 times/);
    const unknown = await failure(fetcher.fetch('http://nowhere.example/a.png', 1000, 'media', 'X'));
    expect(unknown.status).toBe(422);
    expect(unknown.message).toMatch(/could not be fetched \(ENOTFOUND\)/);
  });

  it('accepts only https unless plain http is allowed', async () => {
    const strict = new MediaFetcher({ ...policy, allowHttp: false }, hooks);
    try {
      const error = await failure(strict.fetch(`http://media.example:${port(publicServer)}/a.png`, 1000, 'media', 'X'));
      expect(error.status).toBe(400);
      expect(error.message).toMatch(/media\.url must be an https URL \(plain http needs MEDIA_ALLOW_HTTP_URLS=true\)/);
      // An https URL to a private literal is refused before any TLS work.
      expect((await failure(strict.fetch('https://127.0.0.2/x', 1000, 'media', 'X'))).message).toMatch(/non-public address 127\.0\.0\.2/);
    } finally {
      await strict.close();
    }
  });
});

describe('a gateway with the default media settings', () => {
  let gw: TestGateway;
  let server: MediaServer;

  beforeAll(async () => {
    server = new MediaServer();
    await server.start();
    gw = await startGateway({ env: { MEDIA_ALLOW_HTTP_URLS: 'true' } });
  });
  afterAll(async () => {
    await gw?.stop();
    await server?.stop();
  });

  it('refuses media URLs on loopback and private addresses', async () => {
    const samples = await makeSamples();
    const a = await connectedInstance(gw, uniqueNumber());
    const url = server.file('/photo.png', samples.png, 'image/png');
    const res = await gw.api('POST', '/api/v1/send/media', { key: a.token, body: { number: uniqueNumber(), media: { url } } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatch(
      /media\.url points to the non-public address 127\.0\.0\.1; private and loopback addresses are refused \(MEDIA_ALLOW_PRIVATE_URLS\)/,
    );
    const byName = await gw.api('POST', '/api/v1/send/sticker', {
      key: a.token,
      body: { number: uniqueNumber(), media: { url: url.replace('127.0.0.1', 'localhost') } },
    });
    expect(byName.status).toBe(422);
    expect(byName.body.error).toMatch(/localhost resolves to the non-public address/);
  });
});

describe('media bodies in flight (MEDIA_INFLIGHT_MAX_BYTES)', () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startGateway({ env: { MEDIA_INFLIGHT_MAX_BYTES: String(1024 * 1024) } });
  });
  afterAll(async () => gw?.stop());

  /** Starts a /send/media request that declares `length` bytes and sends only its first part. */
  function heldRequest(token: string, length: number) {
    const target = new URL(`${gw.url}/api/v1/send/media`);
    const request = http.request({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      headers: { apikey: token, 'content-type': 'application/json', 'content-length': String(length) },
    });
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('response', (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      request.on('error', reject);
    });
    request.write('{"number":"5511999990000","media":{"base64":"');
    return { request, answered };
  }

  it('refuses media bodies past the budget with 503 and retryAfter, and admits again once it frees', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const length = 700 * 1024;
    const first = heldRequest(a.token, length);
    await waitFor(() => (inFlight(gw) >= length ? true : undefined), 5000, 'first body admitted');
    const refused = await gw.api('POST', '/api/v1/send/media', {
      key: a.token,
      body: { number: uniqueNumber(), media: { base64: 'A'.repeat(600 * 1024) } },
    });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: expect.stringMatching(/MEDIA_INFLIGHT_MAX_BYTES/), retryAfter: expect.any(Number) });
    // Small bodies of other routes are not counted.
    expect((await gw.api('POST', '/api/v1/send/text', { key: a.token, body: { number: uniqueNumber(), text: 'still fine' } })).status).toBe(
      200,
    );
    // Unauthenticated bodies are refused before they are counted.
    expect((await gw.api('POST', '/api/v1/send/media', { key: 'wgt_' + 'x'.repeat(43), body: { media: { base64: 'AAAA' } } })).status).toBe(
      401,
    );
    first.request.destroy();
    await first.answered.catch(() => undefined);
    await waitFor(() => (inFlight(gw) === 0 ? true : undefined), 5000, 'budget released');
    // A body alone is admitted even when it is larger than the budget.
    const alone = await gw.api('POST', '/api/v1/send/media', {
      key: a.token,
      body: { number: uniqueNumber(), media: { base64: 'A'.repeat(1200 * 1024) } },
    });
    expect(alone.status).not.toBe(503);
    expect(inFlight(gw)).toBe(0);
  });
});

function inFlight(gw: TestGateway): number {
  return gw.mediaAdmission.bytes;
}

describe('media keys and orphaned files', () => {
  it('never cuts a long message id short: two ids with the same beginning get different keys', () => {
    const common = 'é'.repeat(60);
    const a = mediaKey('i1', `${common}A`);
    const b = mediaKey('i1', `${common}B`);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^i1\/h[0-9a-f]{64}$/);
    // Short ids keep their readable forms.
    expect(mediaKey('i1', 'ABC123')).toBe('i1/ABC123');
    expect(mediaKey('i1', 'a/b')).toBe(`i1/x${Buffer.from('a/b').toString('hex')}`);
  });

  it('sweeps files no message references once they are old enough, including half-written ones', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-orphans-'));
    const store = new LocalMediaStore(root);
    try {
      await store.start();
      await store.put('i1/kept', Buffer.from('a'));
      await store.put('i1/orphan', Buffer.from('b'));
      await store.put('i2/young', Buffer.from('c'));
      fs.writeFileSync(path.join(root, 'i1', 'crashed.abc123.tmp'), 'half');
      const old = (Date.now() - 7_200_000) / 1000;
      for (const file of ['i1/kept', 'i1/orphan', 'i1/crashed.abc123.tmp']) fs.utimesSync(path.join(root, file), old, old);
      const referenced = (keys: string[]) => Promise.resolve(new Set(keys.filter((key) => key === 'i1/kept')));
      expect(await sweepOrphanMedia(store, referenced, Date.now() - 3_600_000)).toBe(2);
      expect(await store.read('i1/kept')).toBeDefined();
      expect(await store.read('i1/orphan')).toBeUndefined();
      expect(fs.existsSync(path.join(root, 'i1', 'crashed.abc123.tmp'))).toBe(false);
      // Younger than the age: kept even without a message (its row may still be on its way).
      expect(await store.read('i2/young')).toBeDefined();
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('asks the message store which keys are referenced', async () => {
    const gw = await startGateway();
    try {
      const a = await connectedInstance(gw, uniqueNumber());
      const samples = await makeSamples();
      const sent = await gw.api('POST', '/api/v1/send/media', {
        key: a.token,
        body: { number: uniqueNumber(), media: { base64: samples.png.toString('base64') } },
      });
      expect(sent.status).toBe(200);
      const key = mediaKey(a.id, sent.body.key.id);
      await gw.media.put(`${a.id}/stray`, Buffer.from('x'), 'text/plain');
      const messages = new MessageStore(gw.storage.db);
      await waitFor(async () => ((await messages.referencedMediaKeys([key])).has(key) ? true : undefined), 5000, 'message row');
      const removed = await sweepOrphanMedia(gw.media, (keys) => messages.referencedMediaKeys(keys), Date.now() + 60_000);
      expect(removed).toBe(1);
      expect(await gw.media.read(key)).toBeDefined();
      expect(await gw.media.read(`${a.id}/stray`)).toBeUndefined();
    } finally {
      await gw.stop();
    }
  });
});
