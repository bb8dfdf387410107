// First, as in src/main.ts: Baileys' messages must be built with this getter.
import { oneOfGetter, protobufOneOfGetter } from './oneof-getter.js';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { proto } from 'baileys';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/gateway.js';
import { freePort, spawnGateway } from '../../../test/support/process.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-oneof-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * Loaded with --allow-natives-syntax: on SIGUSR2 writes to PROBE_OUT whether two objects built as
 * `{}` plus one property never seen before share a map, i.e. whether V8 can still add a transition
 * to the empty object literal's map. Asked once: each probe takes a transition itself.
 */
const PROBE = `
import fs from 'node:fs';
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');
let n = 0;
export function newShapeIsShared() {
  const key = 'probe' + process.pid + '_' + n++;
  const a = {};
  a[key] = 1;
  const b = {};
  b[key] = 1;
  return sameMap(a, b);
}
if (process.env.PROBE_OUT) process.on('SIGUSR2', () => fs.writeFileSync(process.env.PROBE_OUT, String(newShapeIsShared())));
`;
const probeFile = path.join(dir, 'probe.mjs');
fs.writeFileSync(probeFile, PROBE);

describe('oneOfGetter', () => {
  it('answers as protobufjs own getter does', () => {
    const fields = ['text', 'image', 'location'];
    const messages: object[] = [
      {},
      { text: 'hi' },
      { image: { url: 'x' }, other: 1 },
      { text: null, image: undefined },
      { text: 'a', location: { lat: 1 } },
      { location: 0, text: '' },
      { constructor: 1, toString: 1 },
      Object.assign(Object.create({ text: 'inherited' }) as object, { other: 2 }),
    ];
    for (const message of messages) {
      expect(oneOfGetter(fields).call(message)).toBe(protobufOneOfGetter(fields).call(message));
    }
    expect(oneOfGetter(fields).call({ text: 'a', location: { lat: 1 } })).toBe('location');
  });

  it("is the one Baileys' messages use", () => {
    const descriptor = Object.getOwnPropertyDescriptor(proto.EmbeddedContent.prototype, 'content');
    expect(descriptor?.get?.name).toBe('setFieldName');
    const content = proto.EmbeddedContent.create({ embeddedMusic: { songId: '1' } });
    expect(content.content).toBe('embeddedMusic');
    const decoded = proto.EmbeddedContent.decode(proto.EmbeddedContent.encode(content).finish());
    expect(decoded.content).toBe('embeddedMusic');
    expect(proto.EmbeddedContent.create({}).content).toBeUndefined();
  });

  it('leaves the gateway process room for new object shapes once Baileys is loaded', async () => {
    const out = path.join(dir, 'gateway-probe');
    const port = await freePort();
    const gateway = await spawnGateway(
      { DATA_DIR: path.join(dir, 'data'), GLOBAL_API_KEY: 'oneof-test-admin-key-0123456789', PROBE_OUT: out },
      port,
      { nodeArgs: ['--allow-natives-syntax', '--import', probeFile] },
    );
    try {
      // Listening means every module is loaded: the probe asked now tells the steady state.
      gateway.child.kill('SIGUSR2');
      const answer = await waitFor(() => (fs.existsSync(out) ? fs.readFileSync(out, 'utf8') || undefined : undefined), 30_000, 'the probe');
      expect(answer).toBe('true');
    } finally {
      await gateway.kill();
    }
  });

  it("needs to: protobufjs' own getter, loading Baileys, leaves no room", async () => {
    const script = `import { newShapeIsShared } from ${JSON.stringify(probeFile)}; await import('baileys'); console.log(newShapeIsShared());`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], {
      cwd: ROOT,
    });
    expect(stdout.trim()).toBe('false');
  });
});
