/**
 * The `waygate` command end to end: the real bin spawned with plain `node` against a gateway started
 * here (sandbox network): instances, connect by QR and by pairing code, every send kind (a file as
 * multipart), events tail, dead letters, and the exit codes of refusals, usage errors, an
 * unreachable gateway and a timeout.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectedInstance,
  recordEvents,
  startGateway,
  uniqueName,
  uniqueNumber,
  waitFor,
  type RecordedEvents,
  type TestGateway,
} from '../../../test/support/gateway.js';
import { makeSamples, type Samples } from '../../../test/support/media.js';
import { WebhookReceiver } from '../../../test/support/receiver.js';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/waygate.mjs');

interface Running {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function start(args: string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: os.homedir(), ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

describe('the waygate CLI against a sandbox gateway', () => {
  let gw: TestGateway;
  let events: RecordedEvents;
  let samples: Samples;
  let receiver: WebhookReceiver;
  let folder: string;

  /** Runs the bin to the end; `key` defaults to the admin key. */
  async function waygate(args: string[], key?: string, extraEnv: Record<string, string> = {}) {
    const running = start(args, { WAYGATE_URL: gw.url, WAYGATE_KEY: key ?? gw.adminKey, ...extraEnv });
    const code = await running.exit;
    return { code, stdout: running.stdout(), stderr: running.stderr() };
  }

  beforeAll(async () => {
    samples = await makeSamples();
    receiver = new WebhookReceiver();
    await receiver.start();
    gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_MAX_ATTEMPTS: '1' } });
    events = recordEvents(gw);
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-cli-'));
  });
  afterAll(async () => {
    await gw?.stop();
    await receiver?.stop();
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });

  it('creates, lists, rotates and deletes instances, and connects one by scanning the QR drawn in the terminal', async () => {
    const name = uniqueName('cli');
    const created = await waygate(['instances', 'create', name, '--network', 'sandbox', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const instance = JSON.parse(created.stdout);
    expect(instance).toMatchObject({ instanceName: name, status: 'created' });

    const human = await waygate(['instances', 'list']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`${instance.instanceId}\\s+${name}\\s+sandbox\\s+created`));

    // connect waits; the QR is drawn; a phone (the sandbox) scans it; connect ends with the number.
    const number = uniqueNumber();
    const connecting = start(['connect', '--poll-ms', '100'], { WAYGATE_URL: gw.url, WAYGATE_KEY: instance.token });
    await waitFor(() => (connecting.stdout().includes('Scan with WhatsApp') ? true : undefined), 15_000, 'the QR drawing');
    expect(connecting.stdout()).toMatch(/[▀▄█]{10}/);
    const scan = await gw.api('POST', '/api/v1/sandbox/scan', { key: gw.adminKey, body: { instanceId: instance.instanceId, number } });
    expect(scan.status).toBe(200);
    expect(await connecting.exit, connecting.stderr()).toBe(0);
    expect(connecting.stdout()).toContain(`connected as ${number}`);

    const status = await waygate(['status'], instance.token);
    expect(status.stdout).toContain(`${name} (${instance.instanceId}): CONNECTED ${number}`);

    const rotated = await waygate(['instances', 'rotate', instance.instanceId, '--json']);
    expect(rotated.code).toBe(0);
    const { newToken } = JSON.parse(rotated.stdout);
    expect((await waygate(['status'], newToken)).code).toBe(0);

    const deleted = await waygate(['instances', 'delete', instance.instanceId]);
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted ${instance.instanceId}\n` });
    const gone = await waygate(['status'], newToken);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('invalid api key [invalid_api_key]');
  });

  it('connects with a pairing code', async () => {
    const created = JSON.parse((await waygate(['instances', 'create', uniqueName('pair'), '--network', 'sandbox', '--json'])).stdout);
    const number = uniqueNumber();
    const pairing = start(['connect', '--pair', number, '--poll-ms', '100'], { WAYGATE_URL: gw.url, WAYGATE_KEY: created.token });
    const code = await waitFor(
      () => /Pairing code for \d+: (\d{4})-(\d{4})/.exec(pairing.stdout()) ?? undefined,
      15_000,
      'the pairing code',
    );
    const confirm = await gw.api('POST', '/api/v1/sandbox/pair', { key: gw.adminKey, body: { number, code: `${code[1]}${code[2]}` } });
    expect(confirm.status, JSON.stringify(confirm.body)).toBe(200);
    expect(await pairing.exit).toBe(0);
    expect(pairing.stdout()).toContain(`connected as ${number}`);
  });

  it('sends text, a media file (multipart), a sticker, a poll, a location and a contact', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const photo = path.join(folder, 'photo.png');
    const sticker = path.join(folder, 'sticker.webp');
    fs.writeFileSync(photo, samples.png);
    fs.writeFileSync(sticker, samples.webp);
    const kinds: [string[], string][] = [
      [['send', 'text', b.number!, 'hello', 'from', 'the', 'cli'], 'conversation'],
      [['send', 'media', b.number!, photo, '--caption', 'a photo'], 'imageMessage'],
      [['send', 'sticker', b.number!, sticker], 'stickerMessage'],
      [['send', 'poll', b.number!, 'Lunch?', 'Pizza', 'Sushi', '--selectable', '2'], 'pollCreationMessage'],
      [['send', 'location', b.number!, '-23.5505', '-46.6333', '--name', 'São Paulo'], 'locationMessage'],
      [['send', 'contact', b.number!, 'Ana Lima', '5511988887777'], 'contactMessage'],
    ];
    for (const [args, payload] of kinds) {
      const result = await waygate([...args, '--json'], a.token);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
      const reply = JSON.parse(result.stdout);
      const incoming = await events.next(b.id, 'MESSAGE', (e) => e.data.key.id === reply.key.id);
      expect(Object.keys(incoming.data.message), args[1]).toContain(payload);
    }
    const text = events.of(b.id, 'MESSAGE').find((e) => e.data.message.conversation);
    expect(text.data.message.conversation).toBe('hello from the cli');
    const image = events.of(b.id, 'MESSAGE').find((e) => e.data.message.imageMessage);
    expect(image.data.message.imageMessage).toMatchObject({ caption: 'a photo', mimetype: 'image/png' });

    const human = await waygate(['send', 'text', b.number!, 'hi'], a.token);
    expect(human.stdout).toMatch(new RegExp(`^sent \\S+ to ${b.number}@s\\.whatsapp\\.net \\(SENT\\)\\n$`));
  });

  it('tails events as JSON lines and as pretty lines', async () => {
    const a = await connectedInstance(gw, uniqueNumber());
    const b = await connectedInstance(gw, uniqueNumber());
    const env = { WAYGATE_URL: gw.url, WAYGATE_KEY: a.token };
    const tail = start(['events', 'tail', '--types', 'MESSAGE', '--count', '2', '--json'], env);
    await waitFor(() => (gw.hub.count(a.id) === 1 ? true : undefined), 15_000, 'the tail stream');
    await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: a.number, text: 'one' } });
    await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: a.number, text: 'two' } });
    expect(await tail.exit).toBe(0);
    const lines = tail
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((e) => [e.event, e.instanceId, e.data.message.conversation])).toEqual([
      ['MESSAGE', a.id, 'one'],
      ['MESSAGE', a.id, 'two'],
    ]);

    const pretty = start(['events', 'tail', '--count', '1', '--types', 'MESSAGE'], env);
    await waitFor(() => (gw.hub.count(a.id) === 1 ? true : undefined), 15_000, 'the pretty stream');
    await gw.api('POST', '/api/v1/send/text', { key: b.token, body: { number: a.number, text: 'pretty' } });
    expect(await pretty.exit).toBe(0);
    expect(pretty.stdout()).toMatch(/^\d\d:\d\d:\d\d MESSAGE {7}from .+: pretty\n$/);
    expect(pretty.stderr()).toContain('Ctrl-C to stop');
  });

  it('lists and retries dead letters', async () => {
    receiver.defaultStatus = 500;
    const created = JSON.parse(
      (await waygate(['instances', 'create', uniqueName('dl'), '--network', 'sandbox', '--webhook-url', receiver.url, '--json'])).stdout,
    );
    await gw.api('POST', '/api/v1/instance/connect', { key: created.token });
    const deadLetters = () => gw.api('GET', `/api/v1/instance/webhook-dead-letters/${created.instanceId}`, { key: gw.adminKey });
    await waitFor(async () => ((await deadLetters()).body.total > 0 ? true : undefined), 15_000, 'a dead letter');

    const listed = await waygate(['dead-letters', 'list', created.instanceId, '--json']);
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout);
    const letter = page.items[0];
    expect(letter).toMatchObject({ instanceId: created.instanceId, lastStatus: 500 });
    const human = await waygate(['dead-letters', 'list', created.instanceId]);
    expect(human.stdout).toContain(`${letter.id}  ${letter.event}`);

    const failed = await waygate(['dead-letters', 'retry', letter.id]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('not delivered (500)');

    receiver.defaultStatus = 200;
    const retried = await waygate(['dead-letters', 'retry', letter.id]);
    expect(retried).toMatchObject({ code: 0, stdout: `delivered ${letter.id}\n` });
    // The first delivery, the failed retry and the delivered one: the same event each time.
    expect(receiver.requests.filter((r) => r.json?.eventId === letter.eventId)).toHaveLength(3);
  });

  it('exits 1 on refusals, 2 on usage errors, 3 when the gateway is unreachable and 4 on a timeout', async () => {
    const refused = await waygate(['send', 'text', '123', 'x'], gw.adminKey);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/error: POST \/send\/text: .+ \[\w+\]/);
    const a = await connectedInstance(gw, uniqueNumber());
    const invalid = await waygate(['send', 'poll', '5511999990000', 'Q', 'same', 'same'], a.token);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('[validation_failed]');

    expect((await waygate([])).code).toBe(2);
    const unknown = await waygate(['frobnicate']);
    expect(unknown).toMatchObject({ code: 2, stderr: 'unknown command frobnicate; run waygate --help\n' });
    expect((await waygate(['send', 'text', '5511999990000'], a.token)).stderr).toBe('usage: waygate send text <number> <text...>\n');
    expect((await waygate(['send', 'media', '5511999990000', path.join(folder, 'missing.png')], a.token)).stderr).toMatch(
      /cannot read .*missing\.png: ENOENT/,
    );
    expect((await waygate(['status'], '', {})).stderr).toMatch(/no key: pass --key or set WAYGATE_KEY/);

    const unreachable = await waygate(['status', '--url', 'http://127.0.0.1:9'], a.token);
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/cannot reach the gateway at http:\/\/127\.0\.0\.1:9/);

    const created = JSON.parse((await waygate(['instances', 'create', uniqueName('late'), '--network', 'sandbox', '--json'])).stdout);
    const late = await waygate(['connect', '--timeout', '1', '--poll-ms', '100', '--json'], created.token);
    expect(late.code).toBe(4);
    expect(late.stderr).toMatch(/not connected after 1 s/);
    expect(JSON.parse(late.stdout.split('\n')[0]!)).toMatchObject({ event: 'qrcode', attempt: 1 });
  });
});
