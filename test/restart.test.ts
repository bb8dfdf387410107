import { describe, expect, it } from 'vitest';
import { dropSchema } from '../src/storage/db.js';
import { DIALECTS, PG_URL, connectedInstance, newSchemaName, recordEvents, startGateway, uniqueNumber } from './support/gateway.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

describe.each(DIALECTS)('restart on %s', (dialect) => {
  it('brings connected sandbox instances back connected, able to send and receive', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-restart-'));
    const schema = newSchemaName();
    const first = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    const a = await connectedInstance(first, uniqueNumber());
    const b = await connectedInstance(first, uniqueNumber());
    await first.stop();

    const second = await startGateway({ dialect, dataDir, schema, keepSchema: true });
    try {
      const events = recordEvents(second);
      const status = await second.api('GET', '/api/v1/instance/status', { key: a.token });
      expect(status.body).toMatchObject({ status: 'CONNECTED', number: a.number });
      const sent = await second.api('POST', '/api/v1/send/text', { key: a.token, body: { number: b.number, text: 'after restart' } });
      expect(sent.status).toBe(200);
      const got = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === sent.body.key.id);
      expect(got.data.message.conversation).toBe('after restart');
      // No new pairing was needed.
      expect(events.of(a.id, 'QRCODE')).toEqual([]);
    } finally {
      await second.stop();
      if (dialect === 'postgres') await dropSchema(PG_URL, schema);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
