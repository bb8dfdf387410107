import { Writable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { createGateway } from '../gateway.js';
import { createLogger } from '../logger.js';

describe('request logs', () => {
  it('carry the request id and never the api key or a token', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-log-'));
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      GLOBAL_API_KEY: 'log-test-admin-key-0123456789',
      LOG_LEVEL: 'info',
    });
    const gw = await createGateway(config, { logger: createLogger('info', sink) });
    try {
      const url = await gw.listen();
      const created = await fetch(`${url}/api/v1/instance/create`, {
        method: 'POST',
        headers: { apikey: config.globalApiKey!, 'content-type': 'application/json' },
        body: JSON.stringify({ instanceName: 'logged', network: 'sandbox' }),
      });
      const { token, instanceId } = (await created.json()) as { token: string; instanceId: string };
      const status = await fetch(`${url}/api/v1/instance/status`, { headers: { apikey: token } });
      const requestId = status.headers.get('x-request-id')!;
      await fetch(`${url}/api/v1/ws?token=${token}&instanceId=${instanceId}`);
      const all = lines.join('');
      expect(all).toContain(requestId);
      expect(all).not.toContain(token);
      expect(all).not.toContain(config.globalApiKey!);
    } finally {
      await gw.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
