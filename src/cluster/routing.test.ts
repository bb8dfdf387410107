/**
 * Forwarding between processes: a request streams to the other process with the proof and a hop
 * count and comes back as it was answered; an unreachable owner is "try again", an owner that took
 * the request and never answered is "outcome unknown".
 */
import net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { registerErrorHandling } from '../http/errors.js';
import { freePort } from '../../test/support/process.js';
import { attachUpload, takeUpload } from '../media/upload.js';
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

describe('a body kept for passing on after the handler used it (failover group sends)', () => {
  let away: ClusterRouting;
  let sender: FastifyInstance;
  const bytes = Buffer.from('the bytes of an uploaded file');
  /** For each request passed on, how many requests the owner had seen when `settled` was called. */
  const settledAt: number[] = [];

  beforeAll(async () => {
    away = new ClusterRouting(
      secret,
      { place: () => Promise.resolve({ here: false, address: ownerUrl }), leaderPlacement: () => undefined },
      5000,
    );
    sender = Fastify({ bodyLimit: 400 });
    registerErrorHandling(sender, (error, request, reply) => away.serveElsewhere(error, request, reply));
    sender.addHook('onRequest', async (request) => {
      away.keepBody(request);
      // Asked again for the same request (another resolver): nothing changes.
      away.keepBody(request);
    });
    // As a form's body reaches the handler: a media object filled by an uploaded file.
    sender.addHook('preValidation', async (request) => {
      const body = request.body as { media?: Record<string, unknown>; upload?: boolean };
      if (body.upload) attachUpload((body.media = { filename: 'a.bin' }), bytes);
    });
    sender.addHook('preHandler', async (request) => away.beforeHandler(request));
    sender.post('/echo', async (request) => {
      // What building a message does to the body: the media taken out of it.
      const body = request.body as { media?: Record<string, unknown> };
      if (body.media) {
        takeUpload(body.media);
        body.media.base64 = undefined;
      }
      const refusal = away.refusal('an-instance-held-elsewhere');
      const settled = () => settledAt.push(seen.length);
      if (!away.forwardWith(refusal, request, { 'x-waygate-failover-member': 'm1' }, settled)) return { servedHere: true };
      throw refusal;
    });
    await sender.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await sender.close();
    await away.close();
  });

  const post = (payload: object) =>
    sender.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload });

  it('a JSON body goes on as it arrived, not as the handler left it', async () => {
    const res = await post({ to: 'x', media: { base64: 'QUJD' } });
    expect(res.statusCode).toBe(201);
    expect(seen.at(-1)).toMatchObject({ proof: true, pinned: 'm1', body: { to: 'x', media: { base64: 'QUJD' } } });
    // Told once, after the owner had the request (once the answer has streamed back: just after the client has it).
    await vi.waitFor(() => expect(settledAt).toEqual([seen.length]));
  });

  it('an uploaded file goes on as base64 in a JSON body', async () => {
    const res = await post({ to: 'y', upload: true });
    expect(res.statusCode).toBe(201);
    expect(seen.at(-1)!.body).toEqual({ to: 'y', upload: true, media: { filename: 'a.bin', base64: bytes.toString('base64') } });
  });

  it('a body that as JSON would pass the route body limit is not passed on: the handler goes on here', async () => {
    const res = await post({ to: 'z', media: { base64: 'A'.repeat(300) }, pad: 'B'.repeat(50) });
    expect(res.statusCode).toBe(201);
    const big = await post({ to: 'z', upload: true, pad: 'B'.repeat(330) });
    expect(big.statusCode).toBe(200);
    expect(big.json()).toEqual({ servedHere: true });
  });
});
