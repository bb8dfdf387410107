/** /auth routes (sign-in, sessions, profile, users, invitations) and the admin WebSocket /admin/ws. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WebSocket } from 'ws';
import { AppError, errors } from '../errors.js';
import { TOO_MANY_WATCHERS_CLOSE, type WebSocketHub } from '../events/sinks/websocket.js';
import { errorResponses } from '../http/schemas.js';
import type { RoutePlugin } from '../http/types.js';
import { API_PREFIX } from '../http/versioning.js';
import { sameSecret } from '../instance-registry/tokens.js';
import * as S from './schema.js';
import { publicUser, type AuthService, type Session } from './service.js';
import type { UserRow } from './repo.js';

const tags = ['auth'];
const open = { access: 'none' as const };
const BEARER = [{ bearer: [] }];
export const REFRESH_COOKIE = 'waygate_refresh';
export const COOKIE_PATH = `${API_PREFIX}/auth`;

/** Close codes of a refused admin WebSocket (4000 + the HTTP status it would have had). */
export const ADMIN_WS_CLOSE = {
  missingToken: { code: 4401, reason: 'token query parameter is required' },
  invalidToken: { code: 4401, reason: 'invalid or expired access token' },
  viewer: { code: 4403, reason: 'viewers may not watch events; ask an owner or operator' },
  expired: { code: 4401, reason: 'access token expired; reconnect with a fresh one' },
} as const;

export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

export interface AuthRouteOptions {
  service: AuthService;
  hub: WebSocketHub;
  adminKey: string;
  cookieSecure: boolean;
}

export function authRoutes({ service, hub, adminKey, cookieSecure }: AuthRouteOptions): RoutePlugin {
  const userOf = async (request: FastifyRequest): Promise<UserRow> => {
    const token = bearerOf(request);
    if (!token) throw errors.sessionRequired();
    return service.verify(token);
  };
  const ownerOf = async (request: FastifyRequest): Promise<UserRow> => {
    const user = await userOf(request);
    if (user.role !== 'owner') throw errors.ownerOnly();
    return user;
  };
  const setCookie = (request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number) => {
    const secure = cookieSecure || request.protocol === 'https';
    void reply.header(
      'Set-Cookie',
      `${REFRESH_COOKIE}=${encodeURIComponent(value)}; Path=${COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`,
    );
  };
  const withCookie = (request: FastifyRequest, reply: FastifyReply, session: Session) => {
    setCookie(request, reply, session.refreshToken, session.refreshExpiresIn);
    return session;
  };
  const refreshTokenOf = (request: FastifyRequest, body: { refreshToken?: string } | undefined) =>
    body?.refreshToken ?? cookieOf(request, REFRESH_COOKIE);
  // A POST without a body (a browser's refresh) is validated as `{}`.
  const emptyBodyIsObject = async (request: FastifyRequest) => {
    request.body ??= {};
  };
  const sessionNote =
    'Answers `{ accessToken, tokenType, expiresIn, refreshToken, refreshExpiresIn, user }` and sets the refresh token in an httpOnly, SameSite=Strict cookie `waygate_refresh` (path /api/v1/auth). Browsers use the cookie; other clients keep `refreshToken` from the body.';

  return async (app) => {
    app.get(
      '/auth/registration',
      {
        config: open,
        schema: {
          tags,
          summary: 'Can someone register now?',
          description:
            'For the sign-in page: `firstUser` is true while no user exists (the next registration creates the owner); `open` is true when registration needs no invitation.',
          response: { 200: S.RegistrationReply, ...errorResponses() },
        },
      },
      async () => service.registration(),
    );

    app.post(
      '/auth/register',
      {
        config: open,
        schema: {
          tags,
          summary: 'Register a new user',
          description: `The first user becomes the \`owner\`. After that registration needs an \`invitation\` code from an owner (the code decides the role), unless AUTH_OPEN_REGISTRATION is on (then new users are \`viewer\`s). Signs the new user in: ${sessionNote} 403 \`registration is closed\` or an unknown/used/expired invitation; 409 when the email is taken.`,
          body: S.RegisterBody,
          response: { 201: S.SessionReply, ...errorResponses(403, 409) },
        },
      },
      async (request, reply) => {
        const session = await service.register(request.body);
        return reply.status(201).send(withCookie(request, reply, session));
      },
    );

    app.post(
      '/auth/login',
      {
        config: open,
        schema: {
          tags,
          summary: 'Sign in; returns a JWT',
          description: `Checks email and password. ${sessionNote} 401 \`wrong email or password\`. Failed attempts are limited per account (AUTH_LOGIN_MAX_FAILURES, default 5) and per IP (AUTH_LOGIN_MAX_FAILURES_PER_IP, default 20) within AUTH_LOGIN_LOCK_SECONDS (default 900): past that, 429 with \`retryAfter\` seconds and a Retry-After header, even for the right password.`,
          body: S.LoginBody,
          response: { 200: S.SessionReply, ...errorResponses(401) },
        },
      },
      async (request, reply) => {
        try {
          return withCookie(request, reply, await service.login(request.body.email, request.body.password, request.ip));
        } catch (error) {
          if (error instanceof AppError && error.code === 'login_locked') void reply.header('Retry-After', String(error.extra.retryAfter));
          throw error;
        }
      },
    );

    app.post(
      '/auth/refresh',
      {
        config: open,
        preValidation: emptyBodyIsObject,
        schema: {
          tags,
          summary: 'Renew the JWT',
          description: `Exchanges a refresh token (the cookie, or \`refreshToken\` in the body) for a new access token and a new refresh token; the old refresh token is spent. Presenting a spent refresh token again ends that whole sign-in (every token issued from it): 401 \`refresh_token_reused\`. ${sessionNote}`,
          body: S.RefreshBody,
          response: { 200: S.SessionReply, ...errorResponses(401) },
        },
      },
      async (request, reply) => {
        const token = refreshTokenOf(request, request.body);
        if (!token) throw errors.invalidRefreshToken();
        try {
          return withCookie(request, reply, await service.refresh(token));
        } catch (error) {
          setCookie(request, reply, '', 0);
          throw error;
        }
      },
    );

    app.post(
      '/auth/logout',
      {
        config: open,
        preValidation: emptyBodyIsObject,
        schema: {
          tags,
          summary: 'Sign out',
          description:
            'Ends the sign-in of the refresh token (cookie or body): it and every token renewed from it stop working, and the cookie is cleared. Access tokens already issued stay valid until they expire (AUTH_ACCESS_TOKEN_SECONDS). 204, also for an unknown or spent token; 401 when no refresh token is given.',
          body: S.RefreshBody,
          response: { 204: Type.Null(), ...errorResponses(401) },
        },
      },
      async (request, reply) => {
        const token = refreshTokenOf(request, request.body);
        setCookie(request, reply, '', 0);
        if (!token) throw errors.invalidRefreshToken();
        await service.logout(token);
        return reply.status(204).send(null);
      },
    );

    app.get(
      '/auth/me',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'The signed-in user',
          description: 'Needs `Authorization: Bearer <accessToken>`; an `apikey` (admin key or instance token) is not a user: 401.',
          response: { 200: S.UserView, ...errorResponses(401) },
        },
      },
      async (request) => publicUser(await userOf(request)),
    );

    app.patch(
      '/auth/me',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'Update the profile',
          description: 'Changes `name` and/or `email` of the signed-in user. 409 when the email belongs to another user.',
          body: S.ProfileBody,
          response: { 200: S.UserView, ...errorResponses(401, 409) },
        },
      },
      async (request) => service.updateProfile(await userOf(request), request.body),
    );

    app.post(
      '/auth/me/password',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'Change the password',
          description: `Needs \`currentPassword\` (401 when wrong). Ends every sign-in of the user (all refresh tokens, and access tokens issued before now) and starts a new one for the caller: ${sessionNote}`,
          body: S.PasswordBody,
          response: { 200: S.SessionReply, ...errorResponses(401) },
        },
      },
      async (request, reply) => {
        const user = await userOf(request);
        return withCookie(request, reply, await service.changePassword(user, request.body.currentPassword, request.body.newPassword));
      },
    );

    app.get(
      '/auth/users',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'List users (owner)',
          description: 'Every user, oldest first. Owners only (403 otherwise).',
          response: { 200: Type.Object({ items: Type.Array(S.UserView) }), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        await ownerOf(request);
        return { items: await service.listUsers() };
      },
    );

    app.patch(
      '/auth/users/:user_id',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: "Change a user's role (owner)",
          description: "Sets `role`; it applies to the user's next request. 409 when it would leave no owner.",
          params: S.UserIdParams,
          body: S.RoleBody,
          response: { 200: S.UserView, ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => {
        await ownerOf(request);
        return service.setRole(request.params.user_id, request.body.role);
      },
    );

    app.delete(
      '/auth/users/:user_id',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'Delete a user (owner)',
          description: 'Removes the user and ends their sign-ins. 409 for the last owner.',
          params: S.UserIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true), id: Type.String() }), ...errorResponses(401, 403, 404, 409) },
        },
      },
      async (request) => {
        await ownerOf(request);
        await service.deleteUser(request.params.user_id);
        return { deleted: true as const, id: request.params.user_id };
      },
    );

    app.post(
      '/auth/invitations',
      {
        config: open,
        preValidation: emptyBodyIsObject,
        schema: {
          tags,
          security: BEARER,
          summary: 'Invite someone (owner)',
          description:
            'Creates a one-time invitation code with a role (default operator) valid for `expiresInHours` (default 72). The code is shown only here; give it (or the web interface link `registerPath`) to the person, who registers with it.',
          body: S.InvitationBody,
          response: { 201: S.CreatedInvitation, ...errorResponses(401, 403) },
        },
      },
      async (request, reply) => {
        const owner = await ownerOf(request);
        const created = await service.createInvitation(owner.id, request.body.role ?? 'operator', request.body.expiresInHours ?? 72);
        return reply.status(201).send({ ...created, registerPath: `/register?invitation=${encodeURIComponent(created.code)}` });
      },
    );

    app.get(
      '/auth/invitations',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'List invitations (owner)',
          description: 'Newest first, with whether and by whom each was used. Codes are never listed.',
          response: { 200: Type.Object({ items: Type.Array(S.InvitationView) }), ...errorResponses(401, 403) },
        },
      },
      async (request) => {
        await ownerOf(request);
        return { items: await service.listInvitations() };
      },
    );

    app.delete(
      '/auth/invitations/:invitation_id',
      {
        config: open,
        schema: {
          tags,
          security: BEARER,
          summary: 'Withdraw an invitation (owner)',
          description:
            'Owners only. The invitation code stops working at once; a user who already registered with it stays. 404 for an unknown or already used invitation.',
          params: S.InvitationIdParams,
          response: { 200: Type.Object({ deleted: Type.Literal(true), id: Type.String() }), ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => {
        await ownerOf(request);
        await service.deleteInvitation(request.params.invitation_id);
        return { deleted: true as const, id: request.params.invitation_id };
      },
    );

    app.get(
      '/admin/ws',
      {
        websocket: true,
        config: open,
        schema: {
          tags: ['events'],
          summary: "Every instance's events (admin WebSocket)",
          description:
            'Upgrade with `?token=<owner or operator access token, or the admin key>`; optional `events=QRCODE,CONNECTION` (default all) and `instanceId=<id>` (default every instance). Pushes each event envelope as a JSON text frame, like /ws. Live and best-effort. Refusals close with 4401 (missing, invalid or expired token), 4403 (a viewer) or 4429 (more admin sockets open than WS_MAX_CONNECTIONS_PER_INSTANCE). A socket opened with an access token is closed with 4401 when that token expires; reconnect with a fresh one.',
          querystring: S.AdminSocketQuery,
        },
      },
      async (socket: WebSocket, request) => {
        const { token, events, instanceId } = request.query;
        if (!token) return socket.close(ADMIN_WS_CLOSE.missingToken.code, ADMIN_WS_CLOSE.missingToken.reason);
        let expiresAt: number | undefined;
        if (!sameSecret(token, adminKey)) {
          try {
            const user = await service.verify(token);
            if (user.role === 'viewer') return socket.close(ADMIN_WS_CLOSE.viewer.code, ADMIN_WS_CLOSE.viewer.reason);
            expiresAt = service.expiresAt(token);
          } catch {
            return socket.close(ADMIN_WS_CLOSE.invalidToken.code, ADMIN_WS_CLOSE.invalidToken.reason);
          }
        }
        const wanted = events
          ? new Set(
              events
                .split(',')
                .map((e) => e.trim())
                .filter(Boolean),
            )
          : undefined;
        // Admin sockets are capped like an instance's streams (WS_MAX_CONNECTIONS_PER_INSTANCE).
        if (!hub.hasWatcherRoom()) return socket.close(TOO_MANY_WATCHERS_CLOSE.code, TOO_MANY_WATCHERS_CLOSE.reason);
        // The hub closes a socket opened with an access token when that token expires, and sends it nothing after.
        const expiry = expiresAt === undefined ? undefined : { at: expiresAt, close: ADMIN_WS_CLOSE.expired };
        hub.watch(socket, (entry) => (!instanceId || entry.instanceId === instanceId) && (!wanted || wanted.has(entry.type)), expiry);
      },
    );
  };
}
