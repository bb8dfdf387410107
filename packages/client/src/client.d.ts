import type { ApiMethods, RequestOptions, Routes } from './generated/api.js';
import type { EventStream, EventStreamOptions } from './stream.js';

export interface WaygateClientOptions {
  /** The gateway, e.g. `http://localhost:8080` (without /api/v1). */
  baseUrl: string;
  /** The admin key or an instance token, sent as the `apikey` header. */
  apiKey?: string;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** Another fetch (tests, proxies); defaults to the global one. */
  fetch?: typeof fetch;
}

/** A refusal of the gateway: its HTTP status and the error body (`error`, `code`, `details`, `retryAfter`). */
export declare class WaygateError extends Error {
  readonly status: number;
  /** The stable error code (docs/errors.md), when the body has one. */
  readonly code: string | undefined;
  /** Every validation problem of a 400 `validation_failed`. */
  readonly details: string[] | undefined;
  /** Seconds to wait, on 429 and 503 answers that say. */
  readonly retryAfter: number | undefined;
  readonly body: unknown;
  /** `METHOD /path` of the call. */
  readonly route: string;
}

/** One method per operation (ApiMethods), `request` by route, and `events` for the WebSocket stream. */
export interface WaygateClient extends ApiMethods {
  readonly baseUrl: string;
  apiKey: string | undefined;
  /** Calls an operation by its route, e.g. `request('POST /send/text', { number, text })`. */
  request<R extends keyof Routes>(
    route: R,
    ...args: Routes[R]['input'] extends void
      ? [input?: undefined, options?: RequestOptions]
      : Record<string, never> extends Routes[R]['input']
        ? [input?: Routes[R]['input'], options?: RequestOptions]
        : [input: Routes[R]['input'], options?: RequestOptions]
  ): Promise<Routes[R]['response']>;
  /** A WebSocket stream of one instance's events; the token defaults to the client's apiKey. */
  events(options: Omit<EventStreamOptions, 'baseUrl' | 'token'> & { token?: string }): EventStream;
}

export declare const WaygateClient: {
  new (options: WaygateClientOptions): WaygateClient;
  readonly prototype: WaygateClient;
};
