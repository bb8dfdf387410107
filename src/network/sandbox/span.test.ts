/**
 * The sandbox network across gateway processes (span.ts): two SandboxNetworks, each holding one
 * process's sessions, share a transport; what one delivers to a number linked in the other arrives
 * there as if the sender were local. Over an in-memory transport, and once over Redis pub/sub.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from '../../clock.js';
import { eventMediaOf, toJid, type CanonicalEvent, type SessionHost } from '../port.js';
import { SandboxDriver } from './driver.js';
import { SandboxNetwork } from './network.js';
import type { SandboxSession } from './session.js';
import type { Topic } from '../../topic.js';
import { SandboxWorld } from './world.js';
import { MemoryWorldStore } from './world-store.js';

const TIMING = { qrIntervalMs: 60_000, qrMaxAttempts: 1, reconnectDelayMs: 20 };

let numbers = 0;
function uniqueNumber(): string {
  numbers += 1;
  return `55119${String(process.pid % 1000).padStart(3, '0')}${String(numbers).padStart(5, '0')}`;
}

/** Polls until `check` gives a value; no fixed sleeps. */
async function waitFor<T>(check: () => T | undefined, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A shared channel in memory: every publish reaches every subscriber (the publisher too), later, in order. */
class MemoryHub {
  private readonly subscribers: ((payload: string) => void)[] = [];
  readonly published: string[] = [];

  transport(): Topic {
    return {
      description: 'memory hub',
      publish: (payload) => {
        this.published.push(payload);
        setImmediate(() => {
          for (const onMessage of this.subscribers) onMessage(payload);
        });
      },
      subscribe: (onMessage) => void this.subscribers.push(onMessage),
    };
  }
}

/** Redis pub/sub on one channel (the test's stand-in for the production transport in src/cluster/). */
class RedisTestTransport implements Topic {
  readonly description: string;
  private readonly pub: Redis;
  private readonly sub: Redis;
  ready: Promise<unknown> = Promise.resolve();

  constructor(
    url: string,
    private readonly channel: string,
  ) {
    this.description = `redis channel ${channel}`;
    this.pub = new Redis(url, { maxRetriesPerRequest: 1 });
    this.sub = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  publish(payload: string): void {
    this.pub.publish(this.channel, payload).catch(() => undefined);
  }

  subscribe(onMessage: (payload: string) => void): void {
    this.sub.on('message', (channel: string, payload: string) => {
      if (channel === this.channel) onMessage(payload);
    });
    this.ready = this.sub.subscribe(this.channel);
  }

  async close(): Promise<void> {
    await Promise.all([this.pub.quit(), this.sub.quit()]);
  }
}

interface Phone {
  number: string;
  session: SandboxSession;
  events: CanonicalEvent[];
  of<T extends CanonicalEvent['type']>(type: T): Extract<CanonicalEvent, { type: T }>[];
}

/** One gateway process's sandbox: its network, world and driver. */
function processOf(transport?: Topic, debug?: (details: object, message: string) => void, clock: Clock = systemClock) {
  const network = new SandboxNetwork(clock, () => Promise.resolve());
  const world = new SandboxWorld(network, new MemoryWorldStore());
  const driver = new SandboxDriver(network, TIMING, world);
  if (transport) network.span(transport, debug ? { debug } : undefined);

  /** A sandbox instance of this process, connected with a fresh number. */
  async function phone(): Promise<Phone> {
    const number = uniqueNumber();
    const events: CanonicalEvent[] = [];
    const host: SessionHost = {
      instanceId: `instance-${number}`,
      instanceName: `phone ${number}`,
      status: 'CONNECTED',
      number,
      emit: (event) => Promise.resolve(void events.push(event)),
    };
    const session = driver.open(host);
    await session.connect();
    const of = <T extends CanonicalEvent['type']>(type: T) =>
      events.filter((e): e is Extract<CanonicalEvent, { type: T }> => e.type === type);
    return { number, session, events, of };
  }
  return { network, world, phone };
}

function messageWithId(phone: Phone, id: string) {
  return phone.of('MESSAGE').find((e) => e.data.key.id === id);
}

describe('sandbox network', () => {
  it('a sent message arrives with the time its sender gave it, even when a second turns meanwhile', async () => {
    // Each reading of this clock is 0.7 s after the last: every step of a send sees another second.
    let at = 1_790_000_000_000;
    const hub = new MemoryHub();
    const a = processOf(hub.transport(), undefined, { now: () => (at += 700) });
    const b = processOf(hub.transport(), undefined, { now: () => (at += 700) });
    const alice = await a.phone();
    const local = await a.phone();
    const remote = await b.phone();

    const here = await alice.session.send({ kind: 'text', to: local.number, text: 'same process', linkPreview: false });
    expect(messageWithId(local, here.key.id)?.data.messageTimestamp).toBe(here.messageTimestamp);
    const there = await alice.session.send({ kind: 'text', to: remote.number, text: 'other process', linkPreview: false });
    const received = await waitFor(() => messageWithId(remote, there.key.id), 'the MESSAGE in the other process');
    expect(received.data.messageTimestamp).toBe(there.messageTimestamp);
    expect(alice.of('SEND_MESSAGE').map((e) => e.data.messageTimestamp)).toEqual([here.messageTimestamp, there.messageTimestamp]);
  });
});

describe('sandbox network spanning processes (in-memory transport)', () => {
  it('a text from an instance of one process reaches the instance of the other with the key the sender got', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const bob = await b.phone();

    const sent = await alice.session.send({ kind: 'text', to: bob.number, text: 'hello across', linkPreview: false });
    const received = await waitFor(() => messageWithId(bob, sent.key.id), 'the MESSAGE at bob');
    expect(received.data).toEqual({
      key: { remoteJid: toJid(alice.number), fromMe: false, id: sent.key.id },
      pushName: `phone ${alice.number}`,
      message: { conversation: 'hello across' },
      messageTimestamp: sent.messageTimestamp,
    });
    expect(alice.of('SEND_MESSAGE')).toHaveLength(1);

    // Bob answers through his own process; alice gets it the same way.
    const reply = await bob.session.send({ kind: 'text', to: alice.number, text: 'hi back', linkPreview: false });
    const back = await waitFor(() => messageWithId(alice, reply.key.id), 'the reply at alice');
    expect(back.data.message).toEqual({ conversation: 'hi back' });
  });

  it('deliverText returns the key the recipient sees; media bytes travel as base64 and load again', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const bob = await b.phone();
    const contact = uniqueNumber();

    const delivered = await a.network.deliverText(contact, bob.number, 'from a virtual contact');
    expect(delivered).toBeDefined();
    const text = await waitFor(() => messageWithId(bob, delivered!.key.id), 'the text at bob');
    expect(text.data.key).toEqual(delivered!.key);
    expect(text.data.messageTimestamp).toBe(delivered!.messageTimestamp);

    const bytes = randomBytes(2048);
    const media = eventMediaOf({ data: bytes, mimetype: 'application/pdf', fileName: 'a.pdf', sha256: 'x' });
    const sent = await a.network.deliver(contact, bob.number, { documentMessage: { fileName: 'a.pdf' } }, { media });
    const withMedia = await waitFor(() => bob.events.find((e) => e.type === 'MESSAGE' && e.data.key.id === sent!.key.id), 'the document');
    expect(withMedia.media?.mimetype).toBe('application/pdf');
    expect(withMedia.media?.fileName).toBe('a.pdf');
    expect((await withMedia.media!.load()).equals(bytes)).toBe(true);
  });

  it('carries presence and poll votes to the other process', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const bob = await b.phone();

    await a.network.deliverPresence(alice.number, bob.number, 'composing');
    const presence = await waitFor(() => bob.of('CHAT_PRESENCE')[0], 'CHAT_PRESENCE at bob');
    expect(presence.data).toEqual({ remoteJid: toJid(alice.number), participant: toJid(alice.number), presence: 'composing' });

    const vote = await a.network.deliverPollVote(alice.number, bob.number, 'POLL1', ['Yes']);
    const received = await waitFor(() => messageWithId(bob, vote.key.id), 'the poll vote at bob');
    expect(received.data.pollVote).toEqual({ pollMessageId: 'POLL1', selectedOptions: ['Yes'] });
    expect(received.data.messageTimestamp).toBe(vote.messageTimestamp);
    expect(received.data.message).toHaveProperty('pollUpdateMessage.pollCreationMessageKey.id', 'POLL1');
  });

  it('a number linked nowhere: nothing is delivered and nothing throws', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const bob = await b.phone();
    const nobody = uniqueNumber();

    await expect(a.network.deliverText(alice.number, nobody, 'lost')).resolves.toBeDefined();
    await expect(a.network.deliverPresence(alice.number, nobody, 'paused')).resolves.toBeUndefined();
    await expect(a.network.deliverPollVote(alice.number, nobody, 'POLL', ['A'])).resolves.toBeDefined();
    await alice.session.send({ kind: 'text', to: nobody, text: 'into the void', linkPreview: false });
    // The transport keeps order: once a later message arrived, the earlier ones were seen and dropped.
    const sentinel = await a.network.deliverText(alice.number, bob.number, 'sentinel');
    await waitFor(() => messageWithId(bob, sentinel!.key.id), 'the sentinel');
    expect(bob.events.filter((e) => e.type !== 'CONNECTION')).toHaveLength(1);
    expect(alice.events.filter((e) => e.type !== 'CONNECTION' && e.type !== 'SEND_MESSAGE')).toEqual([]);
  });

  it('a local target is delivered once, with nothing published; its own published messages a process ignores', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const carol = await a.phone();
    const bob = await b.phone();

    const sent = await alice.session.send({ kind: 'text', to: carol.number, text: 'same process', linkPreview: false });
    await a.network.deliverPresence(alice.number, carol.number, 'composing');
    await a.network.deliverPollVote(alice.number, carol.number, 'P', ['x']);
    expect(hub.published).toEqual([]);
    expect(carol.of('MESSAGE').filter((e) => e.data.key.id === sent.key.id)).toHaveLength(1);
    expect(carol.of('CHAT_PRESENCE')).toHaveLength(1);

    // A message with a's own origin, addressed to carol, comes back to a: ignored.
    hub.transport().publish(
      JSON.stringify({
        v: 1,
        origin: a.network.spanOrigin,
        kind: 'presence',
        to: carol.number,
        from: alice.number,
        presence: 'recording',
      }),
    );
    const sentinel = await b.network.deliverText(bob.number, carol.number, 'sentinel');
    await waitFor(() => messageWithId(carol, sentinel!.key.id), 'the sentinel at carol');
    expect(carol.of('CHAT_PRESENCE').map((e) => e.data.presence)).toEqual(['composing']);
  });

  it('ignores malformed messages on the transport with a debug log, and goes on', async () => {
    const hub = new MemoryHub();
    const logged: string[] = [];
    const a = processOf(hub.transport(), (_details, message) => void logged.push(message));
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const bob = await b.phone();

    const raw = hub.transport();
    for (const payload of [
      'not json',
      'null',
      '[]',
      '{"v":1}',
      JSON.stringify({ v: 2, origin: 'x', kind: 'presence', to: alice.number, from: bob.number, presence: 'composing' }),
      JSON.stringify({ v: 1, origin: 'x', kind: 'presence', to: alice.number, from: bob.number, presence: 'dancing' }),
      JSON.stringify({ v: 1, origin: 'x', kind: 'message', to: alice.number, from: bob.number, incoming: { key: 'nope' } }),
      JSON.stringify({ v: 1, origin: 'x', kind: 'teleport', to: alice.number }),
    ]) {
      raw.publish(payload);
    }
    const sentinel = await b.network.deliverText(bob.number, alice.number, 'still working');
    await waitFor(() => messageWithId(alice, sentinel!.key.id), 'the sentinel at alice');
    expect(alice.events.filter((e) => e.type !== 'CONNECTION')).toHaveLength(1);
    expect(logged).toHaveLength(8);
    expect(logged.every((m) => m.includes('unknown shape'))).toBe(true);
  });

  it('group events and group messages reach members whose instance lives in the other process', async () => {
    const hub = new MemoryHub();
    const a = processOf(hub.transport());
    const b = processOf(hub.transport());
    const alice = await a.phone();
    const bob = await b.phone();
    // a's world learns of bob as a contact (its own state does not span processes).
    a.network.setName(bob.number, 'Bob');

    const { group } = await alice.session.groups!.create('Across', [bob.number]);
    const created = await waitFor(() => bob.of('GROUP')[0], 'the GROUP event at bob');
    expect(created.data).toMatchObject({ id: group.groupId, action: 'create' });

    const sent = await alice.session.send({ kind: 'text', to: group.groupId, text: 'hello group', linkPreview: false });
    const received = await waitFor(() => messageWithId(bob, sent.key.id), 'the group message at bob');
    expect(received.data).toMatchObject({
      key: { remoteJid: group.groupId, fromMe: false, id: sent.key.id },
      participant: toJid(alice.number),
    });
  });

  it('without span() nothing leaves the process: as before, undefined for text and 404 for a poll vote', async () => {
    const a = processOf();
    const b = processOf();
    const alice = await a.phone();
    const bob = await b.phone();
    expect(a.network.spanned).toBe(false);
    await expect(a.network.deliverText(alice.number, bob.number, 'alone')).resolves.toBeUndefined();
    await expect(a.network.deliverPollVote(alice.number, bob.number, 'P', ['x'])).rejects.toMatchObject({ status: 404 });
    expect(bob.events.filter((e) => e.type !== 'CONNECTION')).toEqual([]);
  });
});

describe('sandbox network spanning processes (Redis pub/sub)', () => {
  const transports: RedisTestTransport[] = [];
  afterEach(async () => {
    await Promise.all(transports.splice(0).map((t) => t.close()));
  });

  it('delivers a text end to end through Redis', async () => {
    const channel = `waygate-test:sandbox-span:${process.pid}:${randomBytes(6).toString('hex')}`;
    const ta = new RedisTestTransport('redis://127.0.0.1:6379', channel);
    const tb = new RedisTestTransport('redis://127.0.0.1:6379', channel);
    transports.push(ta, tb);
    const a = processOf(ta);
    const b = processOf(tb);
    await Promise.all([ta.ready, tb.ready]);
    const alice = await a.phone();
    const bob = await b.phone();

    const sent = await alice.session.send({ kind: 'text', to: bob.number, text: 'via redis', linkPreview: false });
    const received = await waitFor(() => messageWithId(bob, sent.key.id), 'the MESSAGE at bob over Redis');
    expect(received.data).toMatchObject({
      key: { remoteJid: toJid(alice.number), id: sent.key.id },
      message: { conversation: 'via redis' },
    });
    // Nothing came back to alice but her own send.
    expect(alice.events.filter((e) => e.type !== 'CONNECTION' && e.type !== 'SEND_MESSAGE')).toEqual([]);
  });
});
