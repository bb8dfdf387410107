/**
 * The outbox promise: a gateway killed with SIGKILL in the middle of a burst, and started again,
 * delivers every event it acknowledged at least once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './support/gateway.js';
import { freePort, spawnGateway, type GatewayProcess } from './support/process.js';
import { WebhookReceiver } from './support/receiver.js';

const ADMIN = 'crash-test-admin-key-0123456789';

describe('SIGKILL mid-burst', () => {
  const receiver = new WebhookReceiver();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-crash-'));
  let gateway: GatewayProcess | undefined;

  afterAll(async () => {
    await gateway?.kill();
    await receiver.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses no acknowledged event', async () => {
    await receiver.start();
    receiver.delayMs = 5; // the receiver is slower than the burst, so a backlog builds up
    const port = await freePort();
    const env = {
      DATA_DIR: dataDir,
      GLOBAL_API_KEY: ADMIN,
      RATE_LIMIT_PER_IP: '1000000',
      RATE_LIMIT_PER_KEY: '1000000',
      WEBHOOK_RETRY_BASE_MS: '50',
    };
    gateway = await spawnGateway(env, port);
    const call = async (method: string, route: string, body?: unknown, key = ADMIN) => {
      const res = await fetch(`${gateway!.url}${route}`, {
        method,
        headers: { apikey: key, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    const created = await call('POST', '/api/v1/instance/create', {
      instanceName: 'crash',
      network: 'sandbox',
      webhookUrl: receiver.url,
      webhookEvents: ['MESSAGE'],
    });
    expect(created.status).toBe(201);
    const { instanceId, token } = created.body;
    await call('POST', '/api/v1/instance/connect', undefined, token);
    expect((await call('POST', '/api/v1/sandbox/scan', { instanceId, number: '5511900000001' })).status).toBe(200);

    const acknowledged = new Set<string>();
    let next = 0;
    const total = 600;
    let killed = false;
    const worker = async () => {
      while (next < total && !killed) {
        const i = next++;
        try {
          const res = await call('POST', '/api/v1/sandbox/messages', { from: '5511900000002', to: '5511900000001', text: `burst ${i}` });
          if (res.status === 200) acknowledged.add(res.body.key.id);
        } catch {
          // the process died under this request: not acknowledged
        }
        if (acknowledged.size >= 200 && !killed) {
          killed = true;
          await gateway!.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(killed).toBe(true);
    const deliveredBeforeRestart = new Set(receiver.events('MESSAGE').map((e) => e.data.key.id));
    // The kill happened with a backlog still in the outbox.
    expect([...acknowledged].some((id) => !deliveredBeforeRestart.has(id))).toBe(true);

    gateway = await spawnGateway(env, port);
    await waitFor(
      () => {
        const got = new Set(receiver.events('MESSAGE').map((e) => e.data.key.id));
        return [...acknowledged].every((id) => got.has(id)) ? true : undefined;
      },
      60_000,
      'every acknowledged event to arrive',
    );
    // Duplicates (at-least-once) carry the same eventId.
    const byKey = new Map<string, Set<string>>();
    for (const e of receiver.events('MESSAGE')) {
      const ids = byKey.get(e.data.key.id) ?? new Set<string>();
      ids.add(e.eventId);
      byKey.set(e.data.key.id, ids);
    }
    for (const ids of byKey.values()) expect(ids.size).toBe(1);
    // Two process starts and a 60 s wait for the backlog: a loaded machine needs more than vitest's default 30 s.
  }, 180_000);
});
