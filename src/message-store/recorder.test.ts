/** The recorder's deadline on received media: a slow download never holds the event. */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { loadConfig } from '../config.js';
import type { InstanceService } from '../instance-registry/service.js';
import type { MediaStore } from '../media/store.js';
import type { CanonicalEvent } from '../network/port.js';
import { MessageRecorder } from './recorder.js';
import type { MessageStore, StoredMessage } from './store.js';

function setup(timeoutMs: number) {
  const saved: StoredMessage[] = [];
  const written: string[] = [];
  const messages = { save: (message: StoredMessage) => (saved.push(message), Promise.resolve()) } as unknown as MessageStore;
  const media = { put: (key: string) => (written.push(key), Promise.resolve()) } as unknown as MediaStore;
  const instances = { find: () => Promise.resolve(undefined) } as unknown as InstanceService;
  const config = loadConfig({ MEDIA_RECORD_TIMEOUT_MS: String(timeoutMs) }).media;
  const recorder = new MessageRecorder(messages, media, instances, config, new ManualClock(), pino({ level: 'silent' }));
  return { recorder, saved, written };
}

function incoming(load: () => Promise<Buffer>): CanonicalEvent {
  return {
    type: 'MESSAGE',
    data: {
      key: { remoteJid: '5511@s.whatsapp.net', fromMe: false, id: 'M1' },
      message: { imageMessage: { caption: 'x' } },
      messageTimestamp: 1,
    },
    media: { mimetype: 'image/jpeg', load },
  };
}

describe('recording a received message with media', () => {
  it('lets the event go without its media when the download passes MEDIA_RECORD_TIMEOUT_MS', async () => {
    const { recorder, saved, written } = setup(150);
    const event = incoming(() => new Promise<Buffer>(() => undefined));
    const started = Date.now();
    await recorder.record('i1', event);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(event.data.media).toEqual({ mimetype: 'image/jpeg', stored: false, reason: 'timeout' });
    expect(saved).toHaveLength(1);
    expect(saved[0]!.media).toBeUndefined();
    expect(written).toEqual([]);
  });

  it('writes nothing when the bytes arrive after the deadline', async () => {
    const { recorder, written } = setup(100);
    let arrive: (bytes: Buffer) => void = () => undefined;
    const event = incoming(() => new Promise<Buffer>((resolve) => (arrive = resolve)));
    await recorder.record('i1', event);
    arrive(Buffer.from('late bytes'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual([]);
    expect(event.data.media).toMatchObject({ stored: false, reason: 'timeout' });
  });

  it('stores media that arrives in time', async () => {
    const { recorder, saved, written } = setup(5000);
    const event = incoming(() => Promise.resolve(Buffer.from('bytes')));
    await recorder.record('i1', event);
    expect(written).toHaveLength(1);
    expect(event.data.media).toMatchObject({ mimetype: 'image/jpeg', fileLength: 5, downloadUrl: '/api/v1/message/download/M1' });
    expect(saved[0]!.media).toMatchObject({ size: 5 });
  });
});
