/**
 * `npm start` (scripts/start.mjs): the built server starts, every line it prints is a JSON log line,
 * and a start with unchanged sources does not build again. The test command builds first
 * (`scripts/start.mjs --build-only`), so here the server starts straight away.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './support/gateway.js';
import { freePort } from './support/process.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-start-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

async function start(): Promise<{ lines: string[]; stop: () => Promise<void>; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', GLOBAL_API_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const lines: string[] = [];
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`npm start exited: ${out}${err}`);
      return (await fetch(`${url}/api/v1/server/ok`).catch(() => undefined))?.ok ? true : undefined;
    },
    180_000,
    'the started server to answer',
  );
  return {
    url,
    lines,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      lines.push(...out.split('\n').filter((line) => line !== ''));
      expect(err).toBe('');
    },
  };
}

describe('npm start', () => {
  it('runs the built server, prints JSON lines only, and builds only when sources changed', { timeout: 240_000 }, async () => {
    const first = await start();
    expect((await fetch(`${first.url}/`)).status).toBe(200);
    await first.stop();
    for (const line of first.lines) {
      const entry = JSON.parse(line);
      expect(entry).toHaveProperty('level');
      expect(entry).toHaveProperty('msg');
    }
    const generated = first.lines.map((line) => JSON.parse(line)).find((entry) => entry.adminKeyFile);
    expect(generated?.adminKeyFile).toBe(path.join(dataDir, 'admin-key'));
    // The notice says where the key is; the key itself is not in the log.
    const key = fs.readFileSync(path.join(dataDir, 'admin-key'), 'utf8').trim();
    expect(first.lines.join('\n')).not.toContain(key);

    const second = await start();
    await second.stop();
    expect(second.lines.some((line) => JSON.parse(line).msg.startsWith('building'))).toBe(false);
    expect(second.lines.some((line) => JSON.parse(line).msg === 'Waygate is listening')).toBe(true);
  });
});
