import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { LogLevel } from '../config.js';
import { createInstance, startGateway, type TestGateway } from '../../test/support/gateway.js';

interface LogLine {
  msg: string;
  level: number;
  reqId?: string;
  req?: { method: string; url: string; id: string };
  res?: { statusCode: number };
  responseTime?: unknown;
}

/** A gateway whose log lines (the production logger, at `level`) are kept and parsed. */
async function loggedGateway(level: LogLevel): Promise<TestGateway & { text(): string; parsed(): LogLine[] }> {
  const lines: string[] = [];
  const gw = await startGateway({ logs: { level, lines } });
  const text = () => lines.join('');
  const parsed = () =>
    text()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as LogLine);
  return Object.assign(gw, { text, parsed });
}

/** The lines about the request `id` (its `reqId`). */
const linesOf = (gw: { parsed(): LogLine[] }, id: string) => gw.parsed().filter((line) => line.reqId === id);

describe('request logs', () => {
  it('carry the request id and never the api key or a token', async () => {
    const gw = await loggedGateway('info');
    try {
      const { token, id } = await createInstance(gw);
      const status = await fetch(`${gw.url}/api/v1/instance/status`, { headers: { apikey: token } });
      const requestId = status.headers.get('x-request-id')!;
      await fetch(`${gw.url}/api/v1/ws?token=${token}&instanceId=${id}`);
      expect(gw.text()).toContain(requestId);
      expect(gw.text()).not.toContain(token);
      expect(gw.text()).not.toContain(gw.adminKey);
    } finally {
      await gw.stop();
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
        const lines = linesOf(gw, id);
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatchObject({ msg: 'request completed', level: 30, res: { statusCode: status }, req: { method: 'GET', id } });
        expect(typeof lines[0]!.responseTime).toBe('number');
      }
      // The path only: a query can carry a token.
      expect(linesOf(gw, ok.headers.get('x-request-id')!)[0]).toMatchObject({ req: { url: '/api/v1/server/ok' } });
    } finally {
      await gw.stop();
    }
  });

  it('write the arrival of a WebSocket at info: a connection taken over is never answered', async () => {
    const gw = await loggedGateway('info');
    try {
      const { token, id } = await createInstance(gw);
      const socket = new WebSocket(`${gw.url.replace('http', 'ws')}/api/v1/ws?token=${token}&instanceId=${id}`);
      await new Promise((resolve, reject) => {
        socket.once('open', resolve);
        socket.once('error', reject);
      });
      socket.close();
      const ofSocket = gw.parsed().filter((line) => line.req?.url === '/api/v1/ws');
      expect(ofSocket).toHaveLength(1);
      expect(ofSocket[0]).toMatchObject({ msg: 'incoming request', level: 30, req: { method: 'GET', url: '/api/v1/ws' } });
      expect(gw.text()).not.toContain(token);
    } finally {
      await gw.stop();
    }
  });

  it('write the arrival of an event stream at info: it is answered only when it closes', async () => {
    const gw = await loggedGateway('info');
    try {
      const initialized = await fetch(`${gw.url}/mcp`, {
        method: 'POST',
        headers: { apikey: gw.adminKey, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'log-test', version: '1' } },
        }),
      });
      await initialized.text();
      const open = new AbortController();
      const stream = await fetch(`${gw.url}/mcp`, {
        headers: { apikey: gw.adminKey, accept: 'text/event-stream', 'mcp-session-id': initialized.headers.get('mcp-session-id')! },
        signal: open.signal,
      });
      expect(stream.status).toBe(200);
      // Written before the handler ran: it is there while the stream is still open.
      const lines = linesOf(gw, stream.headers.get('x-request-id')!);
      open.abort();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ msg: 'incoming request', level: 30, req: { method: 'GET', url: '/mcp' } });
    } finally {
      await gw.stop();
    }
  });

  it('add the arrival line at debug', async () => {
    const gw = await loggedGateway('debug');
    try {
      const ok = await fetch(`${gw.url}/api/v1/server/ok`);
      const lines = linesOf(gw, ok.headers.get('x-request-id')!);
      expect(lines.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
      expect(lines[0]).toMatchObject({ level: 20, req: { method: 'GET', url: '/api/v1/server/ok' } });
    } finally {
      await gw.stop();
    }
  });
});
