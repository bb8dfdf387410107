/**
 * Talking to the gateway. The access token lives in memory only; the refresh token is an httpOnly
 * cookie the browser sends to /api/v1/auth (this code never sees it). Instance tokens, needed by
 * instance-scoped routes, are kept in sessionStorage for this tab (see docs/web.md).
 */
import { signal } from './store';

export interface User {
  id: string;
  email: string;
  name: string;
  role: 'owner' | 'operator' | 'viewer';
  createdAt: string;
}

export interface SessionReply {
  accessToken: string;
  expiresIn: number;
  user: User;
}

/** A page of a list route. */
export interface Page<T> {
  items: T[];
  total: number;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

const BASE = '/api/v1';
let accessToken: string | undefined;
export const currentUser = signal<User | null | undefined>(undefined);

function adopt(session: SessionReply): User {
  accessToken = session.accessToken;
  currentUser.value = session.user;
  return session.user;
}

async function parse(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorOf(status: number, body: unknown): ApiError {
  const message =
    typeof body === 'object' && body !== null && 'error' in body && typeof body.error === 'string'
      ? body.error
      : `request failed (${status})`;
  return new ApiError(status, message, body);
}

async function raw(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  const init: RequestInit = { method, headers: { ...headers }, credentials: 'same-origin' };
  if (body instanceof FormData) {
    init.body = body; // the browser sets multipart/form-data with its boundary
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  return fetch(`${BASE}${path}`, init);
}

// One refresh at a time: two parallel refreshes with the same cookie would look like token theft.
let refreshing: Promise<boolean> | undefined;
export function refreshSession(): Promise<boolean> {
  refreshing ??= (async () => {
    try {
      const response = await raw('POST', '/auth/refresh', {}, {});
      if (!response.ok) {
        accessToken = undefined;
        currentUser.value = null;
        return false;
      }
      adopt((await response.json()) as SessionReply);
      return true;
    } catch {
      return false;
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

export function getAccessToken(): string | undefined {
  return accessToken;
}

/** Calls an admin or /auth route as the signed-in user; renews the access token once on 401. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const call = () => raw(method, path, body, accessToken ? { authorization: `Bearer ${accessToken}` } : {});
  let response = await call();
  if (response.status === 401 && accessToken && (await refreshSession())) response = await call();
  const parsed = await parse(response);
  if (!response.ok) throw errorOf(response.status, parsed);
  return parsed as T;
}

/** Calls an instance route with the instance token kept for this tab. */
export async function instanceApi<T>(instanceId: string, method: string, path: string, body?: unknown): Promise<T> {
  const token = instanceTokens.get(instanceId);
  if (!token) throw new ApiError(401, 'no instance token in this browser tab: paste it or rotate it (Token panel)', undefined);
  const response = await raw(method, path, body, { apikey: token });
  const parsed = await parse(response);
  if (!response.ok) throw errorOf(response.status, parsed);
  return parsed as T;
}

export async function login(email: string, password: string): Promise<User> {
  const response = await raw('POST', '/auth/login', { email, password }, {});
  const parsed = await parse(response);
  if (!response.ok) throw errorOf(response.status, parsed);
  return adopt(parsed as SessionReply);
}

export async function register(input: { email: string; password: string; name?: string; invitation?: string }): Promise<User> {
  const response = await raw('POST', '/auth/register', input, {});
  const parsed = await parse(response);
  if (!response.ok) throw errorOf(response.status, parsed);
  return adopt(parsed as SessionReply);
}

export async function changePassword(currentPassword: string, newPassword: string): Promise<void> {
  adopt(await api<SessionReply>('POST', '/auth/me/password', { currentPassword, newPassword }));
}

export async function logout(): Promise<void> {
  await raw('POST', '/auth/logout', {}, {}).catch(() => undefined);
  accessToken = undefined;
  instanceTokens.clear();
  currentUser.value = null;
}

/** Issues a new instance token (the old one keeps its grace period) and keeps it for this tab. */
export async function rotateInstanceToken(instanceId: string): Promise<{ token: string; oldTokenValidUntil: string | null }> {
  const rotated = await api<{ token: string; oldTokenValidUntil: string | null }>(
    'POST',
    `/instance/rotate-token/${encodeURIComponent(instanceId)}`,
  );
  instanceTokens.set(instanceId, rotated.token);
  return rotated;
}

export function setUser(user: User): void {
  currentUser.value = user;
}

const TOKENS_KEY = 'waygate.instanceTokens';
/** Instance tokens of this tab: shown once at creation or rotation, kept until the tab closes or sign-out. */
export const instanceTokens = {
  all(): Record<string, string> {
    try {
      return JSON.parse(sessionStorage.getItem(TOKENS_KEY) ?? '{}') as Record<string, string>;
    } catch {
      return {};
    }
  },
  get(id: string): string | undefined {
    return this.all()[id];
  },
  set(id: string, token: string): void {
    sessionStorage.setItem(TOKENS_KEY, JSON.stringify({ ...this.all(), [id]: token }));
  },
  forget(id: string): void {
    const all = this.all();
    delete all[id];
    sessionStorage.setItem(TOKENS_KEY, JSON.stringify(all));
  },
  clear(): void {
    sessionStorage.removeItem(TOKENS_KEY);
  },
};
