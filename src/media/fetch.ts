/**
 * Fetches media from a caller's URL with the protections a server-side fetch needs: https only
 * (unless MEDIA_ALLOW_HTTP_URLS), every address the host name resolves to checked at connect time
 * (so DNS rebinding cannot slip a private address in), redirects followed by hand and checked hop
 * by hop, one timeout for the whole fetch, and a size cap enforced while reading.
 */
import type { LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import { AppError, errors } from '../errors.js';
import { ipLiteral, isPublicAddress, PrivateAddressError, publicOnlyLookup, systemResolve } from './address.js';

const MAX_REDIRECTS = 5;

export interface FetchPolicy {
  timeoutMs: number;
  allowPrivate: boolean;
  allowHttp: boolean;
}

function findCause<T>(error: unknown, type: new (...args: any[]) => T): T | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth += 1) {
    if (current instanceof type) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Seams for tests: which addresses count as public, and how host names resolve. */
export interface FetchHooks {
  isPublic?: (address: string) => boolean;
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
}

export class MediaFetcher {
  private readonly agent: Agent;
  private readonly isPublic: (address: string) => boolean;

  constructor(
    private readonly policy: FetchPolicy,
    hooks: FetchHooks = {},
  ) {
    const isPublic = hooks.isPublic ?? isPublicAddress;
    this.isPublic = isPublic;
    const resolve = hooks.resolve ?? systemResolve;
    // Private targets allowed: resolve normally; otherwise every resolved address must be public.
    const guardedLookup = policy.allowPrivate ? publicOnlyLookup(() => true, resolve) : publicOnlyLookup(isPublic, resolve);
    this.agent = new Agent({ connect: { lookup: guardedLookup }, connections: 16 });
  }

  /**
   * The body of `url`, at most `maxBytes` long. `field` and `limitName` only word the errors:
   * 400 bad URL, 413 too large, 422 refused (private address, redirect there) or unreachable.
   */
  async fetch(url: string, maxBytes: number, field: string, limitName: string): Promise<{ data: Buffer; contentType: string | undefined }> {
    const signal = AbortSignal.timeout(this.policy.timeoutMs);
    let current = this.checkUrl(url, field);
    try {
      for (let hop = 0; ; hop += 1) {
        const response = await request(current, {
          method: 'GET',
          dispatcher: this.agent,
          signal,
          maxRedirections: 0,
          headers: { accept: '*/*', 'user-agent': 'Waygate media fetcher' },
        });
        if (response.statusCode >= 300 && response.statusCode < 400 && response.headers.location) {
          await response.body.dump();
          if (hop >= MAX_REDIRECTS) throw errors.mediaUnreachable(`${field}.url redirected more than ${MAX_REDIRECTS} times`);
          const location = String(response.headers.location);
          let next: URL;
          try {
            next = new URL(location, current);
          } catch {
            throw errors.mediaUnreachable(`${field}.url redirected to an invalid location`);
          }
          current = this.checkUrl(next.href, field, 'redirected to');
          continue;
        }
        if (response.statusCode < 200 || response.statusCode >= 300) {
          await response.body.dump();
          throw errors.mediaUnreachable(`${field}.url answered HTTP ${response.statusCode}`);
        }
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          await response.body.dump({ limit: 0 }).catch(() => undefined);
          throw errors.mediaTooLarge(`${field} is ${declared} bytes; the limit is ${maxBytes} bytes (${limitName})`);
        }
        const chunks: Buffer[] = [];
        let received = 0;
        for await (const chunk of response.body) {
          const piece = chunk as Buffer;
          received += piece.length;
          if (received > maxBytes) {
            response.body.destroy();
            throw errors.mediaTooLarge(`${field} is larger than ${maxBytes} bytes, the limit (${limitName})`);
          }
          chunks.push(piece);
        }
        const contentType = response.headers['content-type'];
        return { data: Buffer.concat(chunks), contentType: typeof contentType === 'string' ? contentType : undefined };
      }
    } catch (error) {
      if (error instanceof AppError) throw error;
      const refused = findCause(error, PrivateAddressError);
      if (refused) {
        throw errors.mediaUrlRefused(
          `${field}.url: ${refused.message}; private and loopback addresses are refused (MEDIA_ALLOW_PRIVATE_URLS)`,
        );
      }
      if (signal.aborted) throw errors.mediaUnreachable(`${field}.url did not answer within ${this.policy.timeoutMs} ms`);
      const code = (error as { code?: string }).code ?? (findCause(error, Error) as { code?: string } | undefined)?.code;
      throw errors.mediaUnreachable(`${field}.url could not be fetched (${code ?? (error as Error).message})`);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  /** Scheme and literal-address checks, before any connection is made. */
  private checkUrl(raw: string, field: string, how = 'points to'): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw errors.invalidMedia(`${field}.url is not a valid URL`);
    }
    const schemes = this.policy.allowHttp ? ['https:', 'http:'] : ['https:'];
    if (!schemes.includes(url.protocol)) {
      const message = this.policy.allowHttp
        ? `${field}.url must be an http(s) URL`
        : `${field}.url must be an https URL (plain http needs MEDIA_ALLOW_HTTP_URLS=true)`;
      if (how === 'points to') throw errors.invalidMedia(message);
      throw errors.mediaUrlRefused(`${field}.url redirected to ${url.protocol}//; ${message}`);
    }
    const literal = ipLiteral(url.hostname);
    if (literal && !this.policy.allowPrivate && !this.isPublic(literal)) {
      throw errors.mediaUrlRefused(
        `${field}.url ${how} the non-public address ${literal}; private and loopback addresses are refused (MEDIA_ALLOW_PRIVATE_URLS)`,
      );
    }
    return url;
  }
}
