/**
 * Users of the web interface and their sessions: a short-lived access token (HS256 JWT) and a
 * rotating refresh token. Each sign-in starts a refresh-token family; each refresh replaces the token;
 * presenting a replaced token again revokes the whole family (someone copied it). Framework-free.
 */
import fs from 'node:fs';
import path from 'node:path';
import { decodeJwt, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { newId, randomToken, type Clock } from '../clock.js';
import type { AuthConfig } from '../config.js';
import { errors } from '../errors.js';
// Refresh tokens and invitation codes are stored as SHA-256 only, as instance tokens are.
import { hashToken } from '../instance-registry/tokens.js';
import { LoginLimiter } from './login-limiter.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';
import type { AuthRepo, InvitationRow, UserRow } from './repo.js';

export const ROLES = ['owner', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

export interface PublicUser {
  id: string;
  email: string;
  name: string;
  role: Role;
  createdAt: string;
}

export interface Session {
  accessToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  refreshToken: string;
  refreshExpiresIn: number;
  user: PublicUser;
}

export interface PublicInvitation {
  id: string;
  role: Role;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
  usedAt: string | null;
  usedBy: string | null;
}

const ISSUER = 'waygate';
const AUDIENCE = 'waygate-web';

/** The HS256 key: AUTH_JWT_SECRET, or one generated at first start and kept in DATA_DIR/jwt-secret. */
export function resolveJwtSecret(configured: string | undefined, dataDir: string): Uint8Array {
  if (configured !== undefined) return new TextEncoder().encode(configured);
  const file = path.join(dataDir, 'jwt-secret');
  if (fs.existsSync(file)) {
    const secret = fs.readFileSync(file, 'utf8').trim();
    if (secret.length >= 32) return new TextEncoder().encode(secret);
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = randomToken(48);
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return new TextEncoder().encode(secret);
}

export function publicUser(row: UserRow): PublicUser {
  return { id: row.id, email: row.email, name: row.name, role: row.role as Role, createdAt: new Date(row.created_at).toISOString() };
}

function publicInvitation(row: InvitationRow): PublicInvitation {
  return {
    id: row.id,
    role: row.role as Role,
    createdBy: row.created_by,
    createdAt: new Date(row.created_at).toISOString(),
    expiresAt: new Date(row.expires_at).toISOString(),
    usedAt: row.used_at === null ? null : new Date(row.used_at).toISOString(),
    usedBy: row.used_by,
  };
}

const normaliseEmail = (email: string) => email.trim().toLowerCase();

export class AuthService {
  private readonly limiter: LoginLimiter;

  constructor(
    private readonly repo: AuthRepo,
    private readonly config: AuthConfig,
    private readonly key: Uint8Array,
    private readonly clock: Clock,
  ) {
    this.limiter = new LoginLimiter(config, clock);
  }

  /** What the sign-in page needs to know before anyone signs in. */
  async registration(): Promise<{ firstUser: boolean; open: boolean }> {
    const firstUser = (await this.repo.countUsers()) === 0;
    return { firstUser, open: firstUser || this.config.openRegistration };
  }

  async register(input: { email: string; password: string; name?: string; invitation?: string }): Promise<Session> {
    const email = normaliseEmail(input.email);
    let role: Role;
    let invitation: InvitationRow | undefined;
    if ((await this.repo.countUsers()) === 0) {
      role = 'owner';
    } else if (input.invitation !== undefined) {
      invitation = await this.repo.invitationByHash(hashToken(input.invitation));
      if (!invitation || invitation.used_at !== null || invitation.expires_at <= this.clock.now()) throw errors.invalidInvitation();
      role = invitation.role as Role;
    } else if (this.config.openRegistration) {
      role = 'viewer';
    } else {
      throw errors.registrationClosed();
    }
    if (await this.repo.userByEmail(email)) throw errors.conflict('a user with this email already exists');
    const now = this.clock.now();
    const id = newId();
    const row = {
      id,
      email,
      name: input.name?.trim() || email.split('@')[0]!,
      password_hash: await hashPassword(input.password),
      role,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.repo.insertUser(row);
    } catch {
      // The unique email index: someone registered the same email between the check and the insert.
      throw errors.conflict('a user with this email already exists');
    }
    if (invitation && !(await this.repo.useInvitation(invitation.id, id, now))) {
      await this.repo.deleteUser(id);
      throw errors.invalidInvitation();
    }
    return this.startSession((await this.repo.userById(id))!);
  }

  async login(emailInput: string, password: string, ip: string): Promise<Session> {
    const email = normaliseEmail(emailInput);
    const wait = this.limiter.retryAfter(email, ip);
    if (wait > 0) throw errors.loginLocked(wait);
    const user = await this.repo.userByEmail(email);
    const ok = await verifyPassword(password, user?.password_hash ?? (await decoyHash()));
    if (!user || !ok) {
      this.limiter.fail(email, ip);
      throw errors.invalidCredentials();
    }
    this.limiter.succeed(email);
    return this.startSession(user);
  }

  async refresh(refreshToken: string): Promise<Session> {
    const now = this.clock.now();
    const record = await this.repo.refreshToken(hashToken(refreshToken));
    if (!record || record.revokedAt !== null || record.expiresAt <= now) throw errors.invalidRefreshToken();
    if (record.usedAt !== null || !(await this.repo.markUsed(record.hash, now))) {
      await this.repo.revokeFamily(record.family, now);
      throw errors.refreshTokenReused();
    }
    const user = await this.repo.userById(record.userId);
    if (!user) throw errors.invalidRefreshToken();
    return this.issue(user, record.family);
  }

  /** Ends the sign-in the refresh token belongs to (every token of its family). Unknown tokens are ignored. */
  async logout(refreshToken: string): Promise<void> {
    const record = await this.repo.refreshToken(hashToken(refreshToken));
    if (record) await this.repo.revokeFamily(record.family, this.clock.now());
  }

  /** The user of a valid access token; throws invalidSession for anything else. */
  async verify(accessToken: string): Promise<UserRow> {
    let subject: string | undefined;
    let version: unknown;
    try {
      const { payload } = await jwtVerify(accessToken, this.key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
        currentDate: new Date(this.clock.now()),
      });
      subject = payload.sub;
      version = payload.ver;
    } catch (error) {
      if (error instanceof joseErrors.JOSEError || error instanceof TypeError) throw errors.invalidSession();
      throw error;
    }
    const user = subject ? await this.repo.userById(subject) : undefined;
    // A password change bumps the version: access tokens issued before it stop working at once.
    if (!user || user.session_version !== version) throw errors.invalidSession();
    return user;
  }

  /** Milliseconds until a (verified) access token expires. */
  remainingMs(accessToken: string): number {
    return Math.max(0, this.expiresAt(accessToken) - this.clock.now());
  }

  /** Epoch ms (on this service's clock) when an access token expires. */
  expiresAt(accessToken: string): number {
    return (decodeJwt(accessToken).exp ?? 0) * 1000;
  }

  async updateProfile(user: UserRow, change: { name?: string; email?: string }): Promise<PublicUser> {
    const update: { name?: string; email?: string } = {};
    if (change.name !== undefined) update.name = change.name.trim();
    if (change.email !== undefined) {
      const email = normaliseEmail(change.email);
      const other = await this.repo.userByEmail(email);
      if (other && other.id !== user.id) throw errors.conflict('a user with this email already exists');
      update.email = email;
    }
    await this.repo.updateUser(user.id, update, this.clock.now(), false);
    return publicUser((await this.repo.userById(user.id))!);
  }

  /** Changes the password, ends every sign-in of the user and starts a new one for the caller. */
  async changePassword(user: UserRow, currentPassword: string, newPassword: string): Promise<Session> {
    if (!(await verifyPassword(currentPassword, user.password_hash))) throw errors.invalidCredentials();
    const now = this.clock.now();
    await this.repo.updateUser(user.id, { password_hash: await hashPassword(newPassword) }, now, true);
    await this.repo.revokeUser(user.id, now);
    return this.startSession((await this.repo.userById(user.id))!);
  }

  async listUsers(): Promise<PublicUser[]> {
    return (await this.repo.listUsers()).map(publicUser);
  }

  async setRole(id: string, role: Role): Promise<PublicUser> {
    const target = await this.repo.userById(id);
    if (!target) throw errors.notFound('user');
    if (target.role === 'owner' && role !== 'owner' && (await this.repo.countOwners()) <= 1) {
      throw errors.conflict('the last owner cannot be demoted; make another user owner first');
    }
    await this.repo.updateUser(id, { role }, this.clock.now(), false);
    return publicUser((await this.repo.userById(id))!);
  }

  async deleteUser(id: string): Promise<void> {
    const target = await this.repo.userById(id);
    if (!target) throw errors.notFound('user');
    if (target.role === 'owner' && (await this.repo.countOwners()) <= 1) throw errors.conflict('the last owner cannot be deleted');
    await this.repo.deleteUser(id);
  }

  async createInvitation(createdBy: string, role: Role, expiresInHours: number): Promise<PublicInvitation & { code: string }> {
    const code = `wgi_${randomToken(24)}`;
    const now = this.clock.now();
    const row: InvitationRow = {
      id: newId(),
      code_hash: hashToken(code),
      role,
      created_by: createdBy,
      expires_at: now + expiresInHours * 3_600_000,
      used_at: null,
      used_by: null,
      created_at: now,
    };
    await this.repo.insertInvitation(row);
    return { ...publicInvitation(row), code };
  }

  async listInvitations(): Promise<PublicInvitation[]> {
    return (await this.repo.listInvitations()).map(publicInvitation);
  }

  async deleteInvitation(id: string): Promise<void> {
    if (!(await this.repo.deleteInvitation(id))) throw errors.notFound('invitation');
  }

  prune(): Promise<void> {
    return this.repo.pruneRefreshTokens(this.clock.now());
  }

  private startSession(user: UserRow): Promise<Session> {
    return this.issue(user, newId());
  }

  private async issue(user: UserRow, family: string): Promise<Session> {
    const now = this.clock.now();
    const seconds = Math.floor(now / 1000);
    const accessToken = await new SignJWT({ role: user.role, ver: user.session_version })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(user.id)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(seconds)
      .setExpirationTime(seconds + this.config.accessTokenSeconds)
      .setJti(newId())
      .sign(this.key);
    const refreshToken = `wgr_${randomToken(32)}`;
    const refreshSeconds = this.config.refreshTokenDays * 86_400;
    await this.repo.insertRefreshToken({
      hash: hashToken(refreshToken),
      userId: user.id,
      family,
      expiresAt: now + refreshSeconds * 1000,
      createdAt: now,
    });
    return {
      accessToken,
      tokenType: 'Bearer',
      expiresIn: this.config.accessTokenSeconds,
      refreshToken,
      refreshExpiresIn: refreshSeconds,
      user: publicUser(user),
    };
  }
}
