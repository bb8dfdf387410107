/** The S3 media store against a real S3-compatible server (s3rver) started here, alone and in a gateway. */
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, recordEvents, startGateway, uniqueNumber, waitFor, type TestGateway } from '../../test/support/gateway.js';
import { makeSamples, startS3, type S3Server } from '../../test/support/media.js';
import { ConfigError, loadConfig, type S3Config } from '../config.js';
import { MessageStore } from '../message-store/store.js';
import { sweepOrphanMedia } from './orphans.js';
import { S3MediaStore } from './s3-store.js';
import { mediaKey } from './store.js';

describe('S3 media store', () => {
  let s3: S3Server;
  let client: S3Client;

  beforeAll(async () => {
    s3 = await startS3();
    client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  const keysIn = async (bucket: string, prefix = '') =>
    ((await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }))).Contents ?? []).map((o) => o.Key);

  it('creates its bucket, stores, reads, streams and deletes objects under the prefix', async () => {
    const config: S3Config = {
      endpoint: s3.endpoint,
      bucket: 'waygate-unit',
      region: 'us-east-1',
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
      prefix: 'tenant-a/',
    };
    const store = new S3MediaStore(config, pino({ level: 'silent' }));
    try {
      await store.start();
      const bytes = Buffer.from('the bytes of a picture');
      await store.put('inst-1/MSG1', bytes, 'image/png');
      await store.put('inst-1/MSG2', Buffer.from('two'), 'image/png');
      await store.put('inst-2/MSG3', Buffer.from('three'), 'image/png');
      expect(await keysIn('waygate-unit')).toEqual(['tenant-a/inst-1/MSG1', 'tenant-a/inst-1/MSG2', 'tenant-a/inst-2/MSG3']);
      expect((await store.read('inst-1/MSG1'))?.equals(bytes)).toBe(true);
      const chunks: Buffer[] = [];
      for await (const chunk of (await store.stream('inst-1/MSG1'))!) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
      expect(await store.read('inst-1/MISSING')).toBeUndefined();
      expect(await store.stream('inst-1/MISSING')).toBeUndefined();

      await store.delete(['inst-1/MSG2']);
      expect(await keysIn('waygate-unit')).toEqual(['tenant-a/inst-1/MSG1', 'tenant-a/inst-2/MSG3']);
      await store.deletePrefix('inst-1/');
      expect(await keysIn('waygate-unit')).toEqual(['tenant-a/inst-2/MSG3']);
      // start() again finds the bucket and keeps it.
      await store.start();
      expect(await keysIn('waygate-unit')).toEqual(['tenant-a/inst-2/MSG3']);
    } finally {
      await store.close();
    }
  });

  describe('in a gateway', () => {
    let gw: TestGateway;

    beforeAll(async () => {
      gw = await startGateway({
        env: {
          S3_ENDPOINT: s3.endpoint,
          S3_BUCKET: 'waygate-media',
          S3_REGION: 'us-east-1',
          S3_ACCESS_KEY_ID: s3.accessKeyId,
          S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
          S3_FORCE_PATH_STYLE: 'true',
        },
      });
    });
    afterAll(async () => gw?.stop());

    it("keeps sent and received media in the bucket, serves downloads from it, and removes an instance's media with it", async () => {
      expect(gw.media.kind).toBe('s3');
      const events = recordEvents(gw);
      const samples = await makeSamples();
      const a = await connectedInstance(gw, uniqueNumber());
      const b = await connectedInstance(gw, uniqueNumber());
      const res = await gw.api('POST', '/api/v1/send/media', {
        key: a.token,
        body: { number: b.number, media: { base64: samples.jpeg.toString('base64') } },
      });
      expect(res.status).toBe(200);
      const incoming = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === res.body.key.id);
      expect(incoming.data.media.mimetype).toBe('image/jpeg');

      expect(await keysIn('waygate-media', `${b.id}/`)).toEqual([`${b.id}/${res.body.key.id}`]);
      expect(await keysIn('waygate-media', `${a.id}/`)).toEqual([`${a.id}/${res.body.key.id}`]);
      const download = await fetch(`${gw.url}${incoming.data.media.downloadUrl}`, { headers: { apikey: b.token } });
      expect(download.status).toBe(200);
      expect(Buffer.from(await download.arrayBuffer()).equals(samples.jpeg)).toBe(true);

      const deleted = await gw.api('DELETE', `/api/v1/instance/delete/${b.id}`, { key: gw.adminKey });
      expect(deleted.status).toBe(200);
      expect(await keysIn('waygate-media', `${b.id}/`)).toEqual([]);
      expect(await keysIn('waygate-media', `${a.id}/`)).toHaveLength(1);
    });

    it('sweeps objects no message references (a crash between upload and save) and keeps referenced and young ones', async () => {
      const a = await connectedInstance(gw, uniqueNumber());
      const samples = await makeSamples();
      const sent = await gw.api('POST', '/api/v1/send/media', {
        key: a.token,
        body: { number: uniqueNumber(), media: { base64: samples.png.toString('base64') } },
      });
      expect(sent.status).toBe(200);
      const kept = mediaKey(a.id, sent.body.key.id);
      const messages = new MessageStore(gw.storage.db);
      await waitFor(async () => ((await messages.referencedMediaKeys([kept])).has(kept) ? true : undefined), 5000, 'message row');
      // What a crash after the upload and before the message row leaves in the bucket.
      for (const stray of ['CRASHED1', 'CRASHED2']) {
        await client.send(new PutObjectCommand({ Bucket: 'waygate-media', Key: `${a.id}/${stray}`, Body: 'orphan bytes' }));
      }
      const referenced = (keys: string[]) => messages.referencedMediaKeys(keys);

      // Younger than the orphan age: nothing goes (its message row may still be on its way).
      expect(await sweepOrphanMedia(gw.media, referenced, Date.now() - 3_600_000)).toBe(0);
      expect(await keysIn('waygate-media', `${a.id}/`)).toHaveLength(3);

      // Past the age: the strays go, the sent picture stays and still downloads.
      expect(await sweepOrphanMedia(gw.media, referenced, Date.now() + 60_000)).toBe(2);
      expect(await keysIn('waygate-media', `${a.id}/`)).toEqual([kept]);
      expect((await gw.media.read(kept))?.equals(samples.png)).toBe(true);
    });
  });
});

describe('S3 settings', () => {
  it('need S3_BUCKET, paired keys and a valid bucket name', () => {
    const base = { DATA_DIR: '/tmp/waygate-config-test' };
    expect(loadConfig(base).s3).toBeUndefined();
    expect(() => loadConfig({ ...base, S3_ENDPOINT: 'http://127.0.0.1:9000' })).toThrow(/S3_ENDPOINT: is set but S3_BUCKET is not/);
    expect(() => loadConfig({ ...base, S3_BUCKET: 'ok-bucket', S3_ACCESS_KEY_ID: 'x' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, S3_BUCKET: 'Bad_Bucket' })).toThrow(/S3_BUCKET: must be 3 to 63 lowercase/);
    expect(loadConfig({ ...base, S3_BUCKET: 'ok-bucket', S3_FORCE_PATH_STYLE: 'true' }).s3).toMatchObject({
      bucket: 'ok-bucket',
      region: 'us-east-1',
      forcePathStyle: true,
      prefix: '',
    });
    expect(() => loadConfig({ ...base, MEDIA_ALLOW_PRIVATE_URLS: 'maybe' })).toThrow(/MEDIA_ALLOW_PRIVATE_URLS: expected true or false/);
    expect(() => loadConfig({ ...base, BATCH_INTERVAL_MS: '100' })).toThrow(/BATCH_INTERVAL_MS: must not be below BATCH_MIN_INTERVAL_MS/);
    const media = loadConfig(base).media;
    expect(media.maxBytes.image).toBe(16 * 1_048_576);
    expect(media.bodyLimitBytes).toBeGreaterThan(64 * 1_048_576 * (4 / 3));
  });
});
