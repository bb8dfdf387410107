/**
 * The `waygate` command line: instances, pairing, sending, events and dead letters over the
 * gateway's REST API, through @waygate/client. Plain ESM JavaScript: runs on plain Node >= 20.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import QRCode from 'qrcode';
import { WaygateClient, WaygateError } from '@waygate/client';

/** Exit codes (also in the help text and README). */
export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3, timeout: 4 };

const HELP = `waygate: command line for the Waygate WhatsApp gateway

Usage: waygate [--url URL] [--key KEY] [--json] <command> ...

Settings: --url (or WAYGATE_URL, default http://localhost:8080) and --key (or WAYGATE_KEY): the
admin key for instances and dead letters, an instance token for connect, status, send and events.

Instances (admin key)
  instances list                              every instance with its status
  instances create <name> [--webhook-url URL] [--webhook-secret S] [--network whatsapp|sandbox] [--events A,B]
                                              prints the token and webhook secret (shown once)
  instances delete <instanceId>
  instances rotate <instanceId>               prints the new token and until when the old one works
Pairing (instance token)
  connect [--pair NUMBER] [--timeout SECONDS] draws the QR code (or prints the 8-digit pairing code)
                                              and waits until the instance is CONNECTED (default 180 s)
  status
Sending (instance token)
  send text <number> <text...>
  send media <number> <file> [--caption T] [--type image|video|audio|document] [--voice-note] [--mimetype M]
  send sticker <number> <file>
  send poll <number> <question> <option> <option>... [--selectable N]
  send location <number> <latitude> <longitude> [--name N] [--address A]
  send contact <number> <fullName> <phone>
Events (instance token)
  events tail [--types A,B] [--count N]       live events over the WebSocket, reconnecting after drops;
                                              pretty lines, or JSON lines with --json
Dead letters (admin key)
  dead-letters list <instanceId> [--limit N] [--offset N]
  dead-letters retry <deadLetterId>

Options: --json (machine output: JSON, one object per line for events), --help, --version.
Exit codes: 0 done, 1 the gateway refused (the error and its code are printed), 2 usage error,
3 the gateway could not be reached, 4 timed out waiting.`;

const OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  'webhook-url': { type: 'string' },
  'webhook-secret': { type: 'string' },
  network: { type: 'string' },
  events: { type: 'string' },
  pair: { type: 'string' },
  timeout: { type: 'string' },
  caption: { type: 'string' },
  type: { type: 'string' },
  'voice-note': { type: 'boolean' },
  mimetype: { type: 'string' },
  selectable: { type: 'string' },
  name: { type: 'string' },
  address: { type: 'string' },
  types: { type: 'string' },
  count: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  'poll-ms': { type: 'string' },
};

class UsageError extends Error {}
class TimeoutError extends Error {}

/** Where the CLI writes; tests and embedding pass their own. */
export function consoleIo() {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    env: process.env,
    /** Resolves when the user interrupts (Ctrl-C). */
    interrupted: new Promise((resolve) => process.once('SIGINT', resolve)),
  };
}

function integer(value, name, min = 0) {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`--${name} must be a whole number of at least ${min}`);
  return Number(value);
}

function needs(positionals, count, usage) {
  if (positionals.length < count) throw new UsageError(`usage: waygate ${usage}`);
}

function list(value) {
  return value
    ? value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean)
    : undefined;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function time(iso) {
  return (iso ?? new Date().toISOString()).slice(11, 19);
}

/** One line for an event, for people. */
export function describeEvent(event) {
  const data = event.data ?? {};
  let what;
  switch (event.event) {
    case 'MESSAGE':
    case 'SEND_MESSAGE': {
      const message = data.message ?? {};
      const text = message.conversation ?? message.extendedTextMessage?.text ?? Object.keys(message)[0] ?? '';
      const who = data.key?.fromMe ? `to ${data.key?.remoteJid}` : `from ${data.pushName ?? data.key?.remoteJid}`;
      what = `${who}: ${text}`;
      break;
    }
    case 'CONNECTION':
      what = `${data.status}${data.number ? ` ${data.number}` : ''}${data.reason ? ` (${data.reason})` : ''}`;
      break;
    case 'QRCODE':
      what = `new QR code (attempt ${data.attempt})`;
      break;
    default:
      what = JSON.stringify(data).slice(0, 160);
  }
  return `${time(event.timestamp)} ${event.event.padEnd(13)} ${what}`;
}

export async function run(argv, io = consoleIo()) {
  let parsed;
  // Negative numbers (a longitude) are values, not options: parseArgs would take `-46.6` for a flag.
  const NEGATIVE = '\u0000negative:';
  const args = argv.map((arg) => (/^-\d/.test(arg) ? `${NEGATIVE}${arg}` : arg));
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
    parsed.positionals = parsed.positionals.map((arg) => (arg.startsWith(NEGATIVE) ? arg.slice(NEGATIVE.length) : arg));
    for (const [name, value] of Object.entries(parsed.values)) {
      if (typeof value === 'string' && value.startsWith(NEGATIVE)) parsed.values[name] = value.slice(NEGATIVE.length);
    }
  } catch (error) {
    io.err(`${error.message}\n\nRun waygate --help for the commands.`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.version) {
    const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
    io.out(pkg.version);
    return EXIT.ok;
  }
  if (values.help) {
    io.out(HELP);
    return EXIT.ok;
  }
  if (positionals.length === 0) {
    io.err(HELP);
    return EXIT.usage;
  }
  const baseUrl = values.url ?? io.env.WAYGATE_URL ?? 'http://localhost:8080';
  const apiKey = values.key ?? io.env.WAYGATE_KEY;
  const print = (human, json) => io.out(values.json ? JSON.stringify(json) : human);
  try {
    if (!/^https?:\/\/[^\s]+$/.test(baseUrl)) throw new UsageError(`the gateway URL must start with http:// or https:// (got ${baseUrl})`);
    if (!apiKey) throw new UsageError('no key: pass --key or set WAYGATE_KEY (the admin key, or an instance token)');
    const client = new WaygateClient({ baseUrl, apiKey });
    const [command, sub, ...rest] = positionals;
    const commands = { instances, connect, status, send, events, 'dead-letters': deadLetters };
    const handler = Object.hasOwn(commands, command) ? commands[command] : undefined;
    if (!handler) throw new UsageError(`unknown command ${command}; run waygate --help`);
    await handler({ client, sub, rest, values, print, io, positionals: positionals.slice(1) });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(error.message);
      return EXIT.usage;
    }
    if (error instanceof TimeoutError) {
      io.err(error.message);
      return EXIT.timeout;
    }
    if (error instanceof WaygateError) {
      io.err(`error: ${error.message}${error.code ? ` [${error.code}]` : ''}`);
      for (const detail of error.details?.slice(1) ?? []) io.err(`  ${detail}`);
      return EXIT.refused;
    }
    if (error?.name === 'EventStreamError') {
      io.err(`error: ${error.message}`);
      return EXIT.refused;
    }
    if (error instanceof TypeError && /fetch failed/.test(error.message)) {
      io.err(`cannot reach the gateway at ${baseUrl}: ${error.cause?.code ?? error.cause?.message ?? error.message}`);
      return EXIT.unreachable;
    }
    io.err(`error: ${error?.message ?? String(error)}`);
    return EXIT.refused;
  }
}

async function instances({ client, sub, rest, values, print }) {
  switch (sub) {
    case 'list': {
      const page = await client.request('GET /instance/all', { limit: 500 });
      if (values.json) return print('', page);
      if (page.items.length === 0) return print('no instances', page);
      for (const item of page.items) {
        print(
          `${item.instanceId}  ${item.instanceName.padEnd(24)} ${item.network.padEnd(8)} ${item.status}${item.number ? ` ${item.number}` : ''}`,
        );
      }
      return undefined;
    }
    case 'create': {
      needs(rest, 1, 'instances create <name> [--webhook-url URL] [--network whatsapp|sandbox]');
      if (values.network && !['whatsapp', 'sandbox'].includes(values.network)) throw new UsageError('--network is whatsapp or sandbox');
      const created = await client.request('POST /instance/create', {
        instanceName: rest[0],
        ...(values['webhook-url'] ? { webhookUrl: values['webhook-url'] } : {}),
        ...(values['webhook-secret'] ? { webhookSecret: values['webhook-secret'] } : {}),
        ...(values.network ? { network: values.network } : {}),
        ...(values.events ? { webhookEvents: values.events === 'ALL' ? 'ALL' : list(values.events) } : {}),
      });
      return print(
        [
          `created ${created.instanceName} (${created.instanceId})`,
          `token:          ${created.token}`,
          `webhook secret: ${created.webhookSecret}`,
          'Both are shown only now: keep them.',
        ].join('\n'),
        created,
      );
    }
    case 'delete': {
      needs(rest, 1, 'instances delete <instanceId>');
      const deleted = await client.request('DELETE /instance/delete/{instance_id}', { instance_id: rest[0] });
      return print(`deleted ${rest[0]}`, deleted);
    }
    case 'rotate': {
      needs(rest, 1, 'instances rotate <instanceId>');
      const rotated = await client.request('POST /instance/rotate-token/{instance_id}', { instance_id: rest[0] });
      return print(`new token: ${rotated.newToken}\nthe old token works until ${rotated.oldTokenValidUntil}`, rotated);
    }
    default:
      throw new UsageError('usage: waygate instances list|create|delete|rotate');
  }
}

async function status({ client, print }) {
  const current = await client.request('GET /instance/status');
  print(`${current.instanceName} (${current.instanceId}): ${current.status}${current.number ? ` ${current.number}` : ''}`, current);
}

async function connect({ client, values, print, io, positionals }) {
  if (positionals.length > 0) throw new UsageError('usage: waygate connect [--pair NUMBER] [--timeout SECONDS]');
  const timeoutMs = (integer(values.timeout, 'timeout', 1) ?? 180) * 1000;
  const pollMs = integer(values['poll-ms'], 'poll-ms', 50) ?? 1000;
  if (values.pair !== undefined && !/^\d{7,15}$/.test(values.pair))
    throw new UsageError('--pair takes the phone number: digits with country code');
  const started = await client.request('POST /instance/connect');
  if (started.status !== 'CONNECTED' && values.pair) {
    const pairing = await client.request('POST /instance/pair', { number: values.pair });
    const code = pairing.pairingCode;
    print(
      `Pairing code for ${pairing.number}: ${code.slice(0, 4)}-${code.slice(4)}\nOn the phone: Linked devices > Link a device > Link with phone number instead.`,
      { event: 'pairing_code', ...pairing },
    );
  }
  const deadline = Date.now() + timeoutMs;
  let shown;
  for (;;) {
    const current = await client.request('GET /instance/status');
    if (current.status === 'CONNECTED') {
      print(`connected as ${current.number}`, { event: 'connected', ...current });
      return;
    }
    if (current.status === 'QRCODE' && !values.pair) {
      const qr = await client.request('GET /instance/qr').catch((error) => {
        // Between two QR codes (404), or paired since the status was read (409): the next round tells.
        if (error instanceof WaygateError && (error.status === 404 || error.status === 409)) return undefined;
        throw error;
      });
      if (qr && qr.code !== shown) {
        shown = qr.code;
        if (values.json) print('', { event: 'qrcode', code: qr.code, attempt: qr.attempt, expiresAt: qr.expiresAt });
        else {
          const drawing = await QRCode.toString(qr.code, { type: 'terminal', small: true });
          io.out(`${drawing}\nScan with WhatsApp: Linked devices > Link a device (QR ${qr.attempt}, expires ${time(qr.expiresAt)}).`);
        }
      }
    }
    if (current.status === 'LOGGED_OUT' || (current.status === 'DISCONNECTED' && !current.number && shown)) {
      throw new WaygateError(
        409,
        { error: `the instance is ${current.status}; run waygate connect again`, code: 'not_connected' },
        'GET /instance/status',
      );
    }
    if (Date.now() > deadline) throw new TimeoutError(`not connected after ${timeoutMs / 1000} s (status ${current.status})`);
    await sleep(pollMs);
  }
}

async function fileUpload(file, mimetype) {
  let data;
  try {
    data = await readFile(file);
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${error.code ?? error.message}`);
  }
  return { file: data, filename: path.basename(file), ...(mimetype ? { mimetype } : {}) };
}

async function send({ client, sub, rest, values, print }) {
  const sent = (reply) => print(`sent ${reply.key.id} to ${reply.key.remoteJid} (${reply.status})`, reply);
  switch (sub) {
    case 'text':
      needs(rest, 2, 'send text <number> <text...>');
      return sent(await client.request('POST /send/text', { number: rest[0], text: rest.slice(1).join(' ') }));
    case 'media': {
      needs(rest, 2, 'send media <number> <file> [--caption T] [--type image|video|audio|document] [--voice-note]');
      if (values.type && !['image', 'video', 'audio', 'document'].includes(values.type)) {
        throw new UsageError('--type is image, video, audio or document');
      }
      return sent(
        await client.request('POST /send/media', {
          number: rest[0],
          media: await fileUpload(rest[1], values.mimetype),
          ...(values.caption ? { caption: values.caption } : {}),
          ...(values.type ? { type: values.type } : {}),
          ...(values['voice-note'] ? { voiceNote: true } : {}),
        }),
      );
    }
    case 'sticker':
      needs(rest, 2, 'send sticker <number> <file>');
      return sent(await client.request('POST /send/sticker', { number: rest[0], media: await fileUpload(rest[1]) }));
    case 'poll': {
      needs(rest, 4, 'send poll <number> <question> <option> <option>... [--selectable N]');
      const selectable = integer(values.selectable, 'selectable', 1);
      return sent(
        await client.request('POST /send/poll', {
          number: rest[0],
          name: rest[1],
          options: rest.slice(2),
          ...(selectable ? { selectableCount: selectable } : {}),
        }),
      );
    }
    case 'location': {
      needs(rest, 3, 'send location <number> <latitude> <longitude> [--name N] [--address A]');
      const [latitude, longitude] = [Number(rest[1]), Number(rest[2])];
      if (!Number.isFinite(latitude) || !Number.isFinite(longitude)) throw new UsageError('latitude and longitude are numbers in degrees');
      return sent(
        await client.request('POST /send/location', {
          number: rest[0],
          latitude,
          longitude,
          ...(values.name ? { name: values.name } : {}),
          ...(values.address ? { address: values.address } : {}),
        }),
      );
    }
    case 'contact':
      needs(rest, 3, 'send contact <number> <fullName> <phone>');
      return sent(
        await client.request('POST /send/contact', { number: rest[0], contacts: [{ fullName: rest[1], phones: [{ number: rest[2] }] }] }),
      );
    default:
      throw new UsageError('usage: waygate send text|media|sticker|poll|location|contact ...');
  }
}

async function events({ client, sub, values, print, io, positionals }) {
  if (sub !== 'tail' || positionals.length > 1) throw new UsageError('usage: waygate events tail [--types A,B] [--count N] [--json]');
  const count = integer(values.count, 'count', 1);
  const me = await client.request('GET /instance/status');
  const stream = client.events({ instanceId: me.instanceId, ...(values.types ? { types: list(values.types) } : {}) });
  let received = 0;
  await new Promise((resolve, reject) => {
    stream.on('open', () => {
      if (!values.json) io.err(`listening to ${me.instanceName} (${me.instanceId}); Ctrl-C to stop`);
    });
    stream.on('reconnecting', ({ attempt, delayMs, code }) =>
      io.err(`stream dropped (${code}); reconnecting #${attempt} in ${delayMs} ms`),
    );
    stream.on('event', (event) => {
      print(describeEvent(event), event);
      received += 1;
      if (count !== undefined && received >= count) {
        stream.close();
        resolve();
      }
    });
    stream.on('error', reject);
    void io.interrupted.then(() => {
      stream.close();
      resolve();
    });
  });
}

async function deadLetters({ client, sub, rest, values, print }) {
  switch (sub) {
    case 'list': {
      needs(rest, 1, 'dead-letters list <instanceId> [--limit N] [--offset N]');
      const page = await client.request('GET /instance/webhook-dead-letters/{instance_id}', {
        instance_id: rest[0],
        ...(values.limit ? { limit: integer(values.limit, 'limit', 1) } : {}),
        ...(values.offset ? { offset: integer(values.offset, 'offset') } : {}),
      });
      if (values.json) return print('', page);
      if (page.items.length === 0) return print('no dead letters', page);
      for (const item of page.items) {
        print(
          `${item.id}  ${item.event.padEnd(13)} ${item.attempts} attempts, last ${item.lastStatus ?? '-'} ${item.lastError ?? ''}`.trimEnd(),
        );
      }
      return print(`${page.items.length} of ${page.total}`);
    }
    case 'retry': {
      needs(rest, 1, 'dead-letters retry <deadLetterId>');
      const result = await client.request('POST /instance/webhook-dead-letters/retry/{dead_letter_id}', { dead_letter_id: rest[0] });
      print(
        result.delivered ? `delivered ${result.id}` : `not delivered (${result.status ?? result.error}); kept as a dead letter`,
        result,
      );
      if (!result.delivered)
        throw new WaygateError(502, { error: `dead letter ${result.id} was not delivered`, code: 'not_delivered' }, 'retry');
      return undefined;
    }
    default:
      throw new UsageError('usage: waygate dead-letters list|retry');
  }
}
