/** The send router's rules, with in-memory twins of the repo, instances and health. */
import type { FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { errors } from '../../errors.js';
import type { Instance, InstanceService } from '../../instance-registry/service.js';
import type { OutgoingMessage } from '../../network/port.js';
import type { SendResult } from '../../outgoing/service.js';
import { hashToken } from '../../instance-registry/tokens.js';
import type { FailoverRepo, GroupRecord, GroupToken } from './repo.js';
import { FailoverService } from './service.js';

function instance(id: string): Instance {
  return {
    id,
    name: id,
    network: 'sandbox',
    status: 'CONNECTED',
    number: '5500000000',
    webhookUrl: null,
    webhookAdminSet: false,
    webhookSecret: 'x'.repeat(32),
    webhookEvents: 'ALL',
    webhookBatch: null,
    settings: {},
    proxyUrl: null,
    createdAt: 0,
    updatedAt: 0,
  };
}

/** Cluster routing as the failover service sees it: which requests another process passed on, and which refusals go on. */
function forwardingTwin(passesOn: Set<unknown> = new Set()) {
  const forwardedWith: Record<string, string>[] = [];
  return {
    forwardedWith,
    forwarding: {
      forwarded: (request: FastifyRequest) => request.headers['x-waygate-cluster'] === 'proof',
      forwardWith: (error: unknown, _request: FastifyRequest, headers: Record<string, string>) => {
        if (!passesOn.has(error)) return false;
        forwardedWith.push(headers);
        return true;
      },
      keepBody: () => undefined,
    },
  };
}

/** A /send/text request naming the member to use and those tried, with the given cluster proof. */
function pinnedSend(proof: string, member: string, tried: string): FastifyRequest {
  return {
    routeOptions: { url: '/api/v1/send/text' },
    headers: { 'x-waygate-cluster': proof, 'x-waygate-failover-member': member, 'x-waygate-failover-tried': tried },
  } as unknown as FastifyRequest;
}

/** `checks` collects the members whose health was read, in order. */
async function setup(scores: Record<string, number>, cluster?: ReturnType<typeof forwardingTwin>, checks: string[] = []) {
  const all = new Map(Object.keys(scores).map((id) => [id, instance(id)]));
  const repo = {
    existingInstances: (ids: string[]) => Promise.resolve(new Set(ids.filter((id) => all.has(id)))),
    insert: () => Promise.resolve(),
    setSticky: () => Promise.resolve(),
  } as unknown as FailoverRepo;
  const service = new FailoverService({
    repo,
    instances: { find: (id: string) => Promise.resolve(all.get(id)) } as unknown as InstanceService,
    health: {
      scoreOf: (id) => {
        checks.push(id);
        return Promise.resolve({ score: scores[id] ?? 0, reasons: [] });
      },
    },
    clock: new ManualClock(),
    log: pino({ level: 'silent' }),
    tokenGraceSeconds: 60,
    groupAdded: () => undefined,
    ...(cluster ? { forwarding: cluster.forwarding } : {}),
  });
  const { token } = await service.create({ name: 'g', members: Object.keys(scores), policy: 'priority' });
  const request = { routeOptions: { url: '/api/v1/send/text' }, headers: {} } as FastifyRequest;
  const caller = (await service.resolve(token, request))!;
  const message: OutgoingMessage = { kind: 'text', to: '5511999990000', text: 'hi', linkPreview: false };
  return { service, caller, message, all, token, request };
}

const sent = (member: Instance): SendResult => ({
  instanceId: member.id,
  key: { remoteJid: 'x@s.whatsapp.net', fromMe: true, id: 'ID' },
  message: {},
  messageTimestamp: 1,
  status: 'SENT',
});

describe('failover send router', () => {
  it('tries the next member when a send was refused before it reached the network', async () => {
    const { service, caller, message } = await setup({ a: 100, b: 100, c: 100 });
    const tried: string[] = [];
    const result = await service.send(caller, message, (member) => {
      tried.push(member.id);
      if (member.id === 'a') return Promise.reject(errors.notConnected('DISCONNECTED'));
      if (member.id === 'b') return Promise.reject(errors.networkRateLimited());
      return Promise.resolve(sent(member));
    });
    expect(tried).toEqual(['a', 'b', 'c']);
    expect(result.instanceId).toBe('c');
  });

  it('never sends again a message that failed on the way, nor one the caller got wrong', async () => {
    const { service, caller, message } = await setup({ a: 100, b: 100 });
    for (const error of [errors.networkError('WhatsApp refused the request: timeout'), errors.badRequest('bad'), new Error('boom')]) {
      const tried: string[] = [];
      await expect(
        service.send(caller, message, (member) => {
          tried.push(member.id);
          return Promise.reject(error);
        }),
      ).rejects.toBe(error);
      expect(tried).toEqual(['a']);
    }
  });

  it('answers 503 when every eligible member refused, and skips members below minHealth', async () => {
    const { service, caller, message } = await setup({ a: 40, b: 90 });
    const tried: string[] = [];
    const failure = await service
      .send(caller, message, (member) => {
        tried.push(member.id);
        return Promise.reject(errors.notConnected('CONNECTING'));
      })
      .catch((error: unknown) => error);
    expect(tried).toEqual(['b']);
    expect(failure).toMatchObject({ status: 503, code: 'failover_no_eligible_member' });
  });

  it("reads the chosen member's health once per send: the send reuses the check made when its request was authenticated", async () => {
    const checks: string[] = [];
    const { service, message, token, request } = await setup({ a: 100, b: 100 }, undefined, checks);
    checks.length = 0;
    const caller = (await service.resolve(token, request))!;
    expect(checks).toEqual(['a']);
    const result = await service.send(caller, message, (member) =>
      member.id === 'a' ? Promise.reject(errors.networkRateLimited()) : Promise.resolve(sent(member)),
    );
    // After a refusal the next member's health is read then, not taken from the request's start.
    expect(checks).toEqual(['a', 'b']);
    expect(result.instanceId).toBe('b');
  });

  it('refuses group tokens outside /send/*', async () => {
    const { service } = await setup({ a: 100 });
    const { token } = await service.create({ name: 'h', members: ['a'] });
    await expect(service.resolve(token, { routeOptions: { url: '/api/v1/chat/list' } } as FastifyRequest)).rejects.toMatchObject({
      status: 403,
      code: 'group_token_send_only',
    });
    expect(
      await service.resolve('wgt_not-a-group-token', { routeOptions: { url: '/api/v1/send/text' } } as FastifyRequest),
    ).toBeUndefined();
  });

  it('cluster mode: a member held by another process gets the request passed on, with the members tried so far', async () => {
    const elsewhere = errors.instanceMoving('b', 1);
    const cluster = forwardingTwin(new Set([elsewhere]));
    const { service, caller, message } = await setup({ a: 100, b: 100, c: 100 }, cluster);
    const tried: string[] = [];
    const outcome = service.send(caller, message, (member) => {
      tried.push(member.id);
      if (member.id === 'a') return Promise.reject(errors.networkRateLimited());
      if (member.id === 'b') return Promise.reject(elsewhere);
      return Promise.resolve(sent(member));
    });
    // The refusal goes up to the error handler (which passes the request on); c is not tried here.
    await expect(outcome).rejects.toBe(elsewhere);
    expect(tried).toEqual(['a', 'b']);
    expect(cluster.forwardedWith).toEqual([{ 'x-waygate-failover-member': 'b', 'x-waygate-failover-tried': 'a,b' }]);
  });

  it('cluster mode: the owner sends with the member it was passed, then goes on past the members tried', async () => {
    const cluster = forwardingTwin();
    const { service, message, token } = await setup({ a: 100, b: 100, c: 100 }, cluster);
    const caller = (await service.resolve(token, pinnedSend('proof', 'b', 'a,b')))!;
    expect(caller.id).toBe('b');
    const tried: string[] = [];
    const result = await service.send(caller, message, (member) => {
      tried.push(member.id);
      return member.id === 'b' ? Promise.reject(errors.networkRateLimited()) : Promise.resolve(sent(member));
    });
    expect(tried).toEqual(['b', 'c']);
    expect(result.instanceId).toBe('c');
  });

  it('a client cannot pick the member: the headers count only on a request another process passed on', async () => {
    const cluster = forwardingTwin();
    const { service, message, token } = await setup({ a: 100, b: 100 }, cluster);
    const caller = (await service.resolve(token, pinnedSend('guess', 'b', 'a')))!;
    expect(caller.id).toBe('a');
    const result = await service.send(caller, message, (member) => Promise.resolve(sent(member)));
    expect(result.instanceId).toBe('a');
  });
});

describe('group tokens in cluster mode', () => {
  /** A cluster process's service whose repo twin holds `stored` and counts the token lookups. */
  function clusterService(stored: { groups: GroupRecord[]; tokens: GroupToken[] }) {
    const clock = new ManualClock();
    const lookups: string[] = [];
    const repo = {
      hasToken: (hash: string) => {
        lookups.push(hash);
        return Promise.resolve(stored.tokens.some((token) => token.hash === hash));
      },
      all: () => Promise.resolve(stored.groups),
      tokens: () => Promise.resolve(stored.tokens),
      sticky: () => Promise.resolve([]),
    } as unknown as FailoverRepo;
    const service = new FailoverService({
      repo,
      instances: { find: (id: string) => Promise.resolve(instance(id)) } as unknown as InstanceService,
      health: { scoreOf: () => Promise.resolve({ score: 100, reasons: [] }) },
      clock,
      log: pino({ level: 'silent' }),
      tokenGraceSeconds: 60,
      groupAdded: () => undefined,
      changed: () => undefined,
    });
    return { service, clock, lookups };
  }

  const send = { routeOptions: { url: '/api/v1/send/text' }, headers: {} } as FastifyRequest;
  const token = `wgg_${'A'.repeat(43)}`;

  it('a token found nowhere is looked up once, and again after a few seconds or a change notice', async () => {
    const { service, clock, lookups } = clusterService({ groups: [], tokens: [] });
    for (let i = 0; i < 3; i += 1) await expect(service.resolve(token, send)).rejects.toMatchObject({ status: 401 });
    expect(lookups).toEqual([hashToken(token)]);
    clock.advance(4_999);
    await expect(service.resolve(token, send)).rejects.toMatchObject({ status: 401 });
    expect(lookups).toHaveLength(1);
    clock.advance(2);
    await expect(service.resolve(token, send)).rejects.toMatchObject({ status: 401 });
    expect(lookups).toHaveLength(2);
    // A notice of a change (another process made a group) forgets the misses.
    await service.loadAll();
    await expect(service.resolve(token, send)).rejects.toMatchObject({ status: 401 });
    expect(lookups).toHaveLength(3);
  });

  it('a token another process made after a miss works once the notice arrives', async () => {
    const stored = { groups: [] as GroupRecord[], tokens: [] as GroupToken[] };
    const { service, lookups } = clusterService(stored);
    await expect(service.resolve(token, send)).rejects.toMatchObject({ status: 401 });
    stored.groups.push({
      id: 'g1',
      name: 'made elsewhere',
      policy: 'priority',
      minHealth: 0,
      sticky: false,
      webhookUrl: null,
      webhookSecret: 'x'.repeat(32),
      members: ['a'],
      createdAt: 0,
      updatedAt: 0,
    });
    stored.tokens.push({ hash: hashToken(token), groupId: 'g1', validUntil: null });
    await service.loadAll();
    expect((await service.resolve(token, send))?.id).toBe('a');
    expect(lookups).toHaveLength(1);
  });
});
