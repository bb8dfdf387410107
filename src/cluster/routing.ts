/**
 * Requests between the processes of a cluster (http/auth.ts `RequestRouting`): the process that took
 * a request authenticates it, counts it against the rate limits, and passes it unchanged (body
 * unread, streamed) to the process that serves it: the instance's owner, or the leader for admin
 * routes. The answer streams back as it came. A forwarded request carries a proof derived from
 * CLUSTER_SECRET and a hop count; it is never counted twice and travels at most `MAX_HOPS` times.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Agent, request as send } from 'undici';
import { errors, type AppError } from '../errors.js';
import type { Placement, RequestRouting } from '../http/auth.js';
import { snapshotBody } from '../media/upload.js';

export const PROOF_HEADER = 'x-waygate-cluster';
export const HOPS_HEADER = 'x-waygate-hops';
/** Headers between the processes (the proof, hops, what `forwardWith` adds) start so; a client's are dropped. */
const CLUSTER_HEADER_PREFIX = 'x-waygate-';
const MAX_HOPS = 3;

/** Headers that belong to one connection, not to the request (RFC 9110 §7.6.1), plus the ones rewritten here. */
const NOT_PASSED = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

/** Connection errors that mean the request never reached the other process. */
const NOT_REACHED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

function neverReached(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_REACHED.has(code)) return true;
  }
  return false;
}

/**
 * On a request that may be passed on after its handler used the body: the body as it arrived (once
 * read). A property of the request only this module knows, not a WeakMap: ephemerons keyed by
 * short-lived objects make every scavenge longer (the refusals below travel the same way).
 */
const KEPT = Symbol('kept body');
const keptOf = (request: FastifyRequest): { body?: unknown } | undefined =>
  (request as FastifyRequest & { [KEPT]?: { body?: unknown } })[KEPT];

export interface RoutingTarget {
  place(instanceId: string, hops: number): Promise<Placement>;
  leaderPlacement(): Placement | undefined;
}

/** What a feature module uses of the routing (failover groups: a member held by another process). */
export type ClusterForwarding = Pick<ClusterRouting, 'forwarded' | 'forwardWith' | 'keepBody'>;

interface Refusal {
  instanceId: string;
  headers?: Record<string, string>;
  body?: string;
  settled?: () => void;
}

export class ClusterRouting implements RequestRouting {
  private readonly proof: Buffer;
  private readonly agent: Agent;
  /**
   * The key under which a refusal this routing made for an instance held elsewhere carries the
   * instance, and what passing it on adds (headers, the kept body, who to tell once it is done).
   */
  private readonly refused = Symbol('refusal');

  constructor(
    secret: string,
    private readonly target: RoutingTarget,
    private readonly timeoutMs: number,
  ) {
    // Not the secret itself: a header that reaches a log shows a digest, never CLUSTER_SECRET.
    this.proof = Buffer.from(createHash('sha256').update(`waygate-cluster:${secret}`).digest('base64url'));
    this.agent = new Agent({ keepAliveTimeout: 30_000, connections: 128, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  forwarded(request: FastifyRequest): boolean {
    const given = request.headers[PROOF_HEADER];
    if (typeof given !== 'string') return false;
    const bytes = Buffer.from(given);
    return bytes.length === this.proof.length && timingSafeEqual(bytes, this.proof);
  }

  private hops(request: FastifyRequest): number {
    if (!this.forwarded(request)) return 0;
    const hops = Number(request.headers[HOPS_HEADER]);
    return Number.isInteger(hops) && hops > 0 ? hops : 1;
  }

  async instance(instanceId: string, request: FastifyRequest): Promise<Placement> {
    const hops = this.hops(request);
    const where = await this.target.place(instanceId, hops);
    if (!where.here && hops >= MAX_HOPS) throw errors.instanceMoving(instanceId, 1);
    return where;
  }

  admin(): Placement | undefined {
    return this.target.leaderPlacement();
  }

  private refusalOf(error: unknown): Refusal | undefined {
    return error instanceof Error ? (error as Error & Record<symbol, Refusal | undefined>)[this.refused] : undefined;
  }

  /** The refusal a session lookup throws for an instance held elsewhere (serveElsewhere recognises it). */
  refusal(instanceId: string): AppError {
    const error = errors.instanceMoving(instanceId, 1);
    const refusal: Refusal = { instanceId };
    Object.defineProperty(error, this.refused, { value: refusal, enumerable: false });
    return error;
  }

  /**
   * `request` may be passed on after its handler has used the body (a failover group's send, whose
   * member is picked while sending): its body is kept as it arrived, files of a form included
   * (`beforeHandler`), and passed on as JSON.
   */
  keepBody(request: FastifyRequest): void {
    if (keptOf(request)) return;
    Object.defineProperty(request, KEPT, { value: {}, enumerable: false, writable: true, configurable: true });
  }

  /** Called once the body is read and validated, before the handler: takes the snapshot `keepBody` asked for. */
  beforeHandler(request: FastifyRequest): void {
    const kept = keptOf(request);
    if (kept && request.body !== undefined && request.body !== null) kept.body = snapshotBody(request.body);
  }

  /**
   * `error` is a refusal for an instance held elsewhere and `request` can be served there: when the
   * error reaches the error handler the request goes to the owner with `headers` (named
   * `x-waygate-...`) added. False when it cannot go (not such a refusal, a body that is not
   * JSON and was not kept, a kept body that as JSON passes the route's body limit, too many hops):
   * the caller handles the refusal itself. When true, `settled` is called once the owner's answer
   * has gone back to the client (or the request could not go after all).
   */
  forwardWith(error: unknown, request: FastifyRequest, headers: Record<string, string>, settled?: () => void): boolean {
    const refused = this.refusalOf(error);
    if (!refused || !this.forwardable(request)) return false;
    const kept = keptOf(request)?.body;
    if (kept !== undefined) {
      // A form's files travel as base64 (4/3 of their size): the owner would refuse what passes the limit.
      const body = JSON.stringify(kept);
      if (Buffer.byteLength(body) > request.routeOptions.bodyLimit) return false;
      refused.body = body;
    }
    refused.headers = headers;
    if (settled) refused.settled = settled;
    return true;
  }

  private forwardable(request: FastifyRequest): boolean {
    const json = (request.headers['content-type'] ?? '').includes('json');
    const body = request.body === undefined || request.body === null || json || keptOf(request)?.body !== undefined;
    return this.hops(request) < MAX_HOPS && body;
  }

  /**
   * A route reached for the session of an instance another process holds (admin routes naming an
   * instance: the leader serves them, the owner holds the session): the request, with its parsed
   * JSON body, is served by the owner. False (the 503 stands) for other errors, bodies that are
   * not JSON, or when the instance cannot be placed now.
   */
  async serveElsewhere(error: AppError, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const refused = this.refusalOf(error);
    if (refused === undefined) return false;
    try {
      if (reply.sent || !this.forwardable(request)) return false;
      const where = await this.target.place(refused.instanceId, this.hops(request)).catch(() => undefined);
      if (!where || where.here) return false;
      const body = refused.body ?? (request.body === undefined || request.body === null ? null : JSON.stringify(request.body));
      await this.forward(request, reply, where.address, body, refused.headers);
      return true;
    } finally {
      refused.settled?.();
    }
  }

  async forward(
    request: FastifyRequest,
    reply: FastifyReply,
    address: string,
    parsed?: string | null,
    added: Record<string, string> = {},
  ): Promise<FastifyReply> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !NOT_PASSED.has(name) && !name.startsWith(CLUSTER_HEADER_PREFIX)) headers[name] = value;
    }
    Object.assign(headers, added);
    headers[PROOF_HEADER] = this.proof.toString();
    headers[HOPS_HEADER] = String(this.hops(request) + 1);
    headers['x-forwarded-for'] = [request.headers['x-forwarded-for'], request.ip].filter(Boolean).join(', ');
    let body: string | FastifyRequest['raw'] | null;
    if (parsed !== undefined) {
      // The body was read here already: send it again as JSON (a form too), with its own length.
      body = parsed;
      delete headers['content-length'];
      if (parsed !== null) headers['content-type'] = 'application/json';
    } else {
      const hasBody =
        request.method !== 'GET' &&
        request.method !== 'HEAD' &&
        (headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined);
      body = hasBody ? request.raw : null;
    }
    let answer: Awaited<ReturnType<typeof send>>;
    try {
      answer = await send(`${address}${request.url}`, {
        method: request.method as 'GET',
        headers,
        body,
        dispatcher: this.agent,
      });
    } catch (error) {
      // Never reached (the owner is gone): it loses its leases at expiry and another process
      // resumes them, so trying again is safe. Reached but no answer: the outcome is unknown.
      if (!neverReached(error)) throw errors.forwardFailed();
      throw errors.instanceMoving(request.instance?.id ?? 'admin', 1);
    }
    // Taken out of Fastify's lifecycle: a reply sent as a stream is not "sent" for Fastify until it
    // ends, and meanwhile the request would go on here (its body parsed, its handler run: the request
    // served twice). The answer streams back as it came, with the headers set here before (CORS...).
    reply.hijack();
    const out: Record<string, number | string | string[]> = {};
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) out[name] = value;
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && !NOT_PASSED.has(name)) out[name] = value;
    }
    reply.raw.writeHead(answer.statusCode, out);
    await pipeline(answer.body, reply.raw).catch(() => reply.raw.destroy());
    return reply;
  }

  /**
   * Calls a route of another process as the admin (a multi-instance admin operation acting on an
   * instance that process holds); throws with the answer's error when it is not a success.
   */
  async callAsAdmin(address: string, method: 'POST' | 'GET', path: string, adminKey: string): Promise<void> {
    const answer = await send(`${address}${path}`, {
      method,
      headers: { apikey: adminKey, [PROOF_HEADER]: this.proof.toString(), [HOPS_HEADER]: '1' },
      dispatcher: this.agent,
    });
    const text = await answer.body.text();
    if (answer.statusCode >= 300) {
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        /* not JSON: the text itself */
      }
      throw new Error(message);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
