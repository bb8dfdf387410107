/**
 * Forwarding between processes: a request streams to the other process with the proof and a hop
 * count and comes back as it was answered; an unreachable owner is "try again", an owner that took
 * the request and never answered is "outcome unknown".
 */
import net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../http/errors.js';
import { freePort } from '../../test/support/process.js';
import { ClusterRouting, HOPS_HEADER, PROOF_HEADER } from './routing.js';

const secret = 'a-cluster-secret-of-at-least-32-characters';
const routing = new ClusterRouting(secret, { place: () => Promise.resolve({ here: true }), leaderPlacement: () => undefined }, 5000);

let owner: FastifyInstance;
let front: FastifyInstance;
let ownerUrl: string;
const seen: { proof: boolean; hops: unknown; body: unknown; forwardedFor: unknown; pinned: unknown }[] = [];

beforeAll(async () => {
  owner = Fastify();
  owner.post('/echo', async (request, reply) => {
    seen.push({
      proof: routing.forwarded(request),
      hops: request.headers[HOPS_HEADER],
      body: request.body,
      forwardedFor: request.headers['x-forwarded-for'],
      pinned: request.headers['x-waygate-failover-member'],
    });
    return reply.code(201).header('x-answer', 'yes').send({ got: request.body });
  });
  ownerUrl = await owner.listen({ port: 0, host: '127.0.0.1' });
  front = Fastify();
  registerErrorHandling(front);
  front.addHook('onRequest', async (request, reply) => {
    const target = request.headers['x-target'];
    if (typeof target === 'string') return routing.forward(request, reply, target);
  });
  front.post('/echo', () => ({ here: true }));
  await front.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await front.close();
  await owner.close();
  await routing.close();
});

describe('forwarding between cluster processes', () => {
  it('streams the request with the proof and a hop count, and the answer back as it was', async () => {
    const res = await front.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'x-target': ownerUrl, 'content-type': 'application/json' },
      payload: { a: 1 },
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['x-answer']).toBe('yes');
    expect(res.json()).toEqual({ got: { a: 1 } });
    expect(seen.at(-1)).toMatchObject({ proof: true, hops: '1', body: { a: 1 } });
  });

  it("a client's x-waygate-* headers are not passed on (only the forwarding process sets them)", async () => {
    const res = await front.inject({
      method: 'POST',
      url: '/echo',
      headers: {
        'x-target': ownerUrl,
        'content-type': 'application/json',
        'x-waygate-failover-member': 'chosen-by-the-client',
        [HOPS_HEADER]: '2',
      },
      payload: {},
    });
    expect(res.statusCode).toBe(201);
    expect(seen.at(-1)).toMatchObject({ proof: true, hops: '1', pinned: undefined });
  });

  it('a forged or missing proof is not a forwarded request', () => {
    expect(routing.forwarded({ headers: {} } as never)).toBe(false);
    expect(routing.forwarded({ headers: { [PROOF_HEADER]: 'guess' } } as never)).toBe(false);
    expect(routing.forwarded({ headers: { [PROOF_HEADER]: secret } } as never)).toBe(false);
  });

  it('an owner that cannot be reached: 503 instance_moving (safe to try again)', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const res = await front.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'x-target': closed, 'content-type': 'application/json' },
      payload: {},
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'instance_moving', retryAfter: 1 });
  });

  it('an owner that took the request and never answered: 502 forward_failed (outcome unknown)', async () => {
    const silent = net.createServer((socket) => socket.once('data', () => socket.destroy()));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const res = await front.inject({
      method: 'POST',
      url: '/echo',
      headers: { 'x-target': `http://127.0.0.1:${port}`, 'content-type': 'application/json' },
      payload: {},
    });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({ code: 'forward_failed' });
    await new Promise((resolve) => silent.close(resolve));
  });
});
