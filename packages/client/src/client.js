/**
 * The Waygate REST client: one method per operation of the gateway's OpenAPI document (the table in
 * generated/operations.js), plus `request(route, input)` by route. Plain ESM JavaScript so it runs
 * on plain Node (>= 20) without a build; the types are in client.d.ts and generated/api.d.ts.
 */
import { OPERATIONS } from './generated/operations.js';
import { EventStream } from './stream.js';

const API_PREFIX = '/api/v1';

/** A refusal of the gateway: the HTTP status and the error body's `error` and `code`. */
export class WaygateError extends Error {
  constructor(status, body, route) {
    const text = body && typeof body === 'object' && typeof body.error === 'string' ? body.error : `HTTP ${status}`;
    super(`${route}: ${text}`);
    this.name = 'WaygateError';
    this.status = status;
    this.code = body && typeof body === 'object' && typeof body.code === 'string' ? body.code : undefined;
    this.details = body && typeof body === 'object' && Array.isArray(body.details) ? body.details : undefined;
    this.retryAfter = body && typeof body === 'object' && typeof body.retryAfter === 'number' ? body.retryAfter : undefined;
    this.body = body;
    this.route = route;
  }
}

function isFile(value) {
  return value !== null && typeof value === 'object' && 'file' in value && isBytes(value.file);
}

function isBytes(value) {
  return value instanceof Uint8Array || value instanceof ArrayBuffer || (typeof Blob !== 'undefined' && value instanceof Blob);
}

/** The file fields of `body` for the templates of its operation (`media`, `cards[].media`): [field name, upload]. */
function filesOf(body, templates) {
  const found = [];
  for (const template of templates) {
    const steps = template.split('.');
    const walk = (value, i, name) => {
      if (value === null || typeof value !== 'object') return;
      const step = steps[i];
      const list = step.endsWith('[]');
      const field = list ? step.slice(0, -2) : step;
      const next = value[field];
      const here = name ? `${name}.${field}` : field;
      if (list) {
        if (!Array.isArray(next)) return;
        next.forEach((item, index) => {
          if (i === steps.length - 1) {
            if (isFile(item)) found.push([`${here}[${index}]`, item, value, field, index]);
          } else walk(item, i + 1, `${here}[${index}]`);
        });
      } else if (i === steps.length - 1) {
        if (isFile(next)) found.push([here, next, value, field]);
      } else walk(next, i + 1, here);
    };
    walk(body, 0, '');
  }
  return found;
}

/** A body with uploads becomes a multipart form: files at their field names, the other fields as text (objects and lists as JSON). */
function formOf(body, templates) {
  const files = filesOf(body, templates);
  if (files.length === 0) return undefined;
  // The fields without their files: a copy, the caller's object stays as given.
  const text = JSON.parse(JSON.stringify(body, (_key, value) => (isFile(value) ? undefined : value)));
  const form = new FormData();
  for (const [name, value] of Object.entries(text)) {
    if (value === undefined || value === null) continue;
    form.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  for (const [name, upload] of files) {
    const blob = upload.file instanceof Blob ? upload.file : new Blob([upload.file], upload.mimetype ? { type: upload.mimetype } : {});
    const typed = upload.mimetype && blob.type !== upload.mimetype ? new Blob([blob], { type: upload.mimetype }) : blob;
    form.append(name, typed, upload.filename ?? 'upload');
  }
  return form;
}

export class WaygateClient {
  /**
   * @param options.baseUrl the gateway, e.g. `http://localhost:8080` (without /api/v1)
   * @param options.apiKey the admin key or an instance token, sent as the `apikey` header
   */
  constructor(options) {
    if (!options || typeof options.baseUrl !== 'string') throw new TypeError('WaygateClient needs { baseUrl }');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.headers = { ...options.headers };
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Calls an operation by route, e.g. `request('POST /send/text', { number, text })`. */
  request(route, input, options) {
    const name = ROUTES.get(route);
    if (!name) throw new TypeError(`unknown route ${route}`);
    return this.call(OPERATIONS[name], route, input, options);
  }

  /** A WebSocket stream of one instance's events, reconnecting until closed (see stream.d.ts). */
  events(options) {
    return new EventStream({ baseUrl: this.baseUrl, token: options.token ?? this.apiKey, ...options });
  }

  async call(operation, route, input, options = {}) {
    const split = operation.pathParams.length > 0 || operation.query.length > 0;
    let path = operation.path;
    const query = new URLSearchParams();
    let body;
    if (split) {
      const values = input ?? {};
      for (const name of operation.pathParams) {
        const value = values[name];
        if (value === undefined || value === null || value === '') throw new TypeError(`${route}: ${name} is required`);
        path = path.replace(`{${name}}`, encodeURIComponent(String(value)));
      }
      for (const name of operation.query) {
        const value = values[name];
        if (value === undefined || value === null) continue;
        for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
      }
      body = values.body;
    } else if (operation.body) {
      body = input;
    }
    const headers = { ...this.headers, ...options.headers };
    const key = options.apiKey ?? this.apiKey;
    if (key) headers.apikey = key;
    let payload;
    if (operation.body) {
      const form = operation.files.length > 0 ? formOf(body ?? {}, operation.files) : undefined;
      if (form) payload = form;
      else {
        payload = JSON.stringify(body ?? {});
        headers['content-type'] = 'application/json';
      }
    }
    const search = query.size > 0 ? `?${query}` : '';
    const response = await this.fetch(`${this.baseUrl}${API_PREFIX}${path}${search}`, {
      method: operation.method,
      headers,
      ...(payload !== undefined ? { body: payload } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!response.ok) {
      const text = await response.text();
      let parsed = text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      throw new WaygateError(response.status, parsed, route);
    }
    if (operation.response === 'none' || response.status === 204) {
      await response.arrayBuffer();
      return undefined;
    }
    if (operation.response === 'binary') return response.arrayBuffer();
    return response.json();
  }
}

const ROUTES = new Map(Object.entries(OPERATIONS).map(([name, op]) => [`${op.method} ${op.path}`, name]));

for (const [name, operation] of Object.entries(OPERATIONS)) {
  const route = `${operation.method} ${operation.path}`;
  Object.defineProperty(WaygateClient.prototype, name, {
    value: function (input, options) {
      // Operations without input take the options first.
      if (!operation.body && operation.pathParams.length === 0 && operation.query.length === 0)
        return this.call(operation, route, undefined, input);
      return this.call(operation, route, input, options);
    },
    writable: true,
    configurable: true,
  });
}
