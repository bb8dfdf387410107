import { Writable } from 'node:stream';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig, type LogLevel } from '../config.js';
import { createGateway } from '../gateway.js';
import { createLogger } from '../logger.js';

/** A gateway whose log lines are kept in `lines`, at `level`. */
async function loggedGateway(level: LogLevel) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-log-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    GLOBAL_API_KEY: 'log-test-admin-key-0123456789',
    LOG_LEVEL: level,
  });
  const gw = await createGateway(config, { logger: createLogger(level, sink) });
  const url = await gw.listen();
  return {
    url,
    config,
    lines,
    /** The parsed lines about the request `id` (its `reqId`). */
    /** A sandbox instance made by the admin: its token and id. */
    async createInstance(instanceName: string) {
      const created = await fetch(`${url}/api/v1/instance/create`, {
        method: 'POST',
        headers: { apikey: config.globalApiKey!, 'content-type': 'application/json' },
        body: JSON.stringify({ instanceName, network: 'sandbox' }),
      });
      return (await created.json()) as { token: string; instanceId: string };
    },
    linesOf: (id: string) => lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.reqId === id),
    async close() {
      await gw.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

describe('request logs', () => {
  it('carry the request id and never the api key or a token', async () => {
    const gw = await loggedGateway('info');
    try {
      const { token, instanceId } = await gw.createInstance('logged');
      const status = await fetch(`${gw.url}/api/v1/instance/status`, { headers: { apikey: token } });
      const requestId = status.headers.get('x-request-id')!;
      await fetch(`${gw.url}/api/v1/ws?token=${token}&instanceId=${instanceId}`);
      const all = gw.lines.join('\n');
      expect(all).toContain(requestId);
      expect(all).not.toContain(token);
      expect(all).not.toContain(gw.config.globalApiKey!);
    } finally {
      await gw.close();
    }
  });

  it('write one line per answered request at info: method, path, status and time together', async () => {
    const gw = await loggedGateway('info');
    try {
      const ok = await fetch(`${gw.url}/api/v1/server/ok?probe=1`);
      const refused = await fetch(`${gw.url}/api/v1/instance/status`, { headers: { apikey: 'not-a-key-of-anyone-0123456789' } });
      expect(refused.status).toBe(401);
      for (const [answer, status] of [
        [ok, 200],
        [refused, 401],
      ] as const) {
        const id = answer.headers.get('x-request-id')!;
        const lines = gw.linesOf(id);
        expect(lines).toHaveLength(1);
        const [line] = lines;
        expect(line).toMatchObject({ msg: 'request completed', level: 30, res: { statusCode: status }, req: { method: 'GET', id } });
        expect(typeof line!.responseTime).toBe('number');
      }
      // The path only: a query can carry a token.
      expect(gw.linesOf(ok.headers.get('x-request-id')!)[0]).toMatchObject({ req: { url: '/api/v1/server/ok' } });
    } finally {
      await gw.close();
    }
  });

  it('write the arrival of a WebSocket at info: a connection taken over is never answered', async () => {
    const gw = await loggedGateway('info');
    try {
      const { token, instanceId } = await gw.createInstance('streamed');
      const socket = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/ws?token=${token}&instanceId=${instanceId}`);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      socket.close();
      const lines = gw.lines.map((line) => JSON.parse(line) as { req?: { url: string }; msg: string; level: number });
      const ofSocket = lines.filter((line) => line.req?.url === '/api/v1/ws');
      expect(ofSocket).toHaveLength(1);
      expect(ofSocket[0]).toMatchObject({ msg: 'incoming request', level: 30, req: { method: 'GET', url: '/api/v1/ws' } });
      expect(gw.lines.join('\n')).not.toContain(token);
    } finally {
      await gw.close();
    }
  });

  it('write the arrival of an event stream at info: it is answered only when it closes', async () => {
    const gw = await loggedGateway('info');
    try {
      const headers = { apikey: gw.config.globalApiKey!, accept: 'application/json, text/event-stream' };
      const initialized = await fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'log-test', version: '1' } },
        }),
      });
      await initialized.text();
      const session = initialized.headers.get('mcp-session-id')!;
      const open = new AbortController();
      const stream = await fetch(`${gw.url}/mcp`, {
        headers: { apikey: gw.config.globalApiKey!, accept: 'text/event-stream', 'mcp-session-id': session },
        signal: open.signal,
      });
      expect(stream.status).toBe(200);
      const lines = gw.linesOf(stream.headers.get('x-request-id')!);
      open.abort();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ msg: 'incoming request', level: 30, req: { method: 'GET', url: '/mcp' } });
    } finally {
      await gw.close();
    }
  });

  it('add the arrival line at debug', async () => {
    const gw = await loggedGateway('debug');
    try {
      const ok = await fetch(`${gw.url}/api/v1/server/ok`);
      const lines = gw.linesOf(ok.headers.get('x-request-id')!);
      expect(lines.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
      expect(lines[0]).toMatchObject({ level: 20, req: { method: 'GET', url: '/api/v1/server/ok' } });
    } finally {
      await gw.close();
    }
  });
});
