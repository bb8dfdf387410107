/** auth/ tables: users, refresh tokens (by SHA-256) and invitations (by SHA-256). */
import type { Kysely, Selectable } from 'kysely';
import type { AuthInvitationsTable, AuthUsersTable, Database } from '../storage/schema.js';

export type UserRow = Selectable<AuthUsersTable>;
export type InvitationRow = Selectable<AuthInvitationsTable>;

export interface RefreshTokenRecord {
  hash: string;
  userId: string;
  family: string;
  expiresAt: number;
  usedAt: number | null;
  revokedAt: number | null;
}

export class AuthRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async countUsers(): Promise<number> {
    const row = await this.db
      .selectFrom('auth_users')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async countOwners(): Promise<number> {
    const row = await this.db
      .selectFrom('auth_users')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('role', '=', 'owner')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async insertUser(row: Omit<UserRow, 'session_version'>): Promise<void> {
    await this.db.insertInto('auth_users').values(row).execute();
  }

  userById(id: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('auth_users').selectAll().where('id', '=', id).executeTakeFirst().then(normalise);
  }

  userByEmail(email: string): Promise<UserRow | undefined> {
    return this.db.selectFrom('auth_users').selectAll().where('email', '=', email).executeTakeFirst().then(normalise);
  }

  async listUsers(): Promise<UserRow[]> {
    const rows = await this.db.selectFrom('auth_users').selectAll().orderBy('created_at').orderBy('id').execute();
    return rows.map((row) => normalise(row)!);
  }

  async updateUser(
    id: string,
    change: Partial<Pick<UserRow, 'email' | 'name' | 'role' | 'password_hash'>>,
    now: number,
    bumpSession: boolean,
  ): Promise<void> {
    await this.db
      .updateTable('auth_users')
      .set((eb) => ({ ...change, updated_at: now, ...(bumpSession ? { session_version: eb('session_version', '+', 1) } : {}) }))
      .where('id', '=', id)
      .execute();
  }

  async deleteUser(id: string): Promise<void> {
    await this.db.deleteFrom('auth_users').where('id', '=', id).execute();
  }

  async insertRefreshToken(record: { hash: string; userId: string; family: string; expiresAt: number; createdAt: number }): Promise<void> {
    await this.db
      .insertInto('auth_refresh_tokens')
      .values({
        hash: record.hash,
        user_id: record.userId,
        family: record.family,
        expires_at: record.expiresAt,
        created_at: record.createdAt,
        used_at: null,
        revoked_at: null,
      })
      .execute();
  }

  async refreshToken(hash: string): Promise<RefreshTokenRecord | undefined> {
    const row = await this.db.selectFrom('auth_refresh_tokens').selectAll().where('hash', '=', hash).executeTakeFirst();
    if (!row) return undefined;
    return {
      hash: row.hash,
      userId: row.user_id,
      family: row.family,
      expiresAt: Number(row.expires_at),
      usedAt: row.used_at === null ? null : Number(row.used_at),
      revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
    };
  }

  /** Marks the token used, only if it was still unused: false means another request used it first. */
  async markUsed(hash: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('auth_refresh_tokens')
      .set({ used_at: now })
      .where('hash', '=', hash)
      .where('used_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async revokeFamily(family: string, now: number): Promise<void> {
    await this.db
      .updateTable('auth_refresh_tokens')
      .set({ revoked_at: now })
      .where('family', '=', family)
      .where('revoked_at', 'is', null)
      .execute();
  }

  async revokeUser(userId: string, now: number): Promise<void> {
    await this.db
      .updateTable('auth_refresh_tokens')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  /** Tokens past their lifetime are of no use to anyone (reuse detection needs them only until then). */
  async pruneRefreshTokens(now: number): Promise<void> {
    await this.db.deleteFrom('auth_refresh_tokens').where('expires_at', '<', now).execute();
  }

  async insertInvitation(row: InvitationRow): Promise<void> {
    await this.db.insertInto('auth_invitations').values(row).execute();
  }

  async invitationByHash(codeHash: string): Promise<InvitationRow | undefined> {
    const row = await this.db.selectFrom('auth_invitations').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
    return row ? normaliseInvitation(row) : undefined;
  }

  async listInvitations(): Promise<InvitationRow[]> {
    const rows = await this.db.selectFrom('auth_invitations').selectAll().orderBy('created_at', 'desc').execute();
    return rows.map(normaliseInvitation);
  }

  /** Claims an unused invitation; false when someone else claimed it first. */
  async useInvitation(id: string, userId: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('auth_invitations')
      .set({ used_at: now, used_by: userId })
      .where('id', '=', id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async deleteInvitation(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('auth_invitations').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }
}

// PostgreSQL returns bigint columns as strings.
function normalise(row: UserRow | undefined): UserRow | undefined {
  if (!row) return undefined;
  return { ...row, session_version: Number(row.session_version), created_at: Number(row.created_at), updated_at: Number(row.updated_at) };
}

function normaliseInvitation(row: InvitationRow): InvitationRow {
  return {
    ...row,
    expires_at: Number(row.expires_at),
    created_at: Number(row.created_at),
    used_at: row.used_at === null ? null : Number(row.used_at),
  };
}
