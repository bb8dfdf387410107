/** The failover tables (failover_groups, failover_group_members, failover_group_tokens). */
import type { Kysely } from 'kysely';
import type { Database } from '../../storage/schema.js';

import type { FailoverPolicy } from '../../vocabulary.js';

export type Policy = FailoverPolicy;

export interface GroupRecord {
  id: string;
  name: string;
  policy: Policy;
  minHealth: number;
  sticky: boolean;
  webhookUrl: string | null;
  webhookSecret: string;
  /** Instance ids in priority order. */
  members: string[];
  createdAt: number;
  updatedAt: number;
}

export interface GroupToken {
  hash: string;
  groupId: string;
  validUntil: number | null;
}

export class FailoverRepo {
  constructor(private readonly db: Kysely<Database>) {}

  async all(): Promise<GroupRecord[]> {
    const [groups, members] = await Promise.all([
      this.db.selectFrom('failover_groups').selectAll().orderBy('created_at').orderBy('id').execute(),
      this.db.selectFrom('failover_group_members').selectAll().orderBy('group_id').orderBy('position').execute(),
    ]);
    return groups.map((row) => ({
      id: row.id,
      name: row.name,
      policy: row.policy as Policy,
      minHealth: row.min_health,
      sticky: row.sticky === 1,
      webhookUrl: row.webhook_url,
      webhookSecret: row.webhook_secret,
      members: members.filter((m) => m.group_id === row.id).map((m) => m.instance_id),
      createdAt: Number(row.created_at),
      updatedAt: Number(row.updated_at),
    }));
  }

  async tokens(): Promise<GroupToken[]> {
    const rows = await this.db.selectFrom('failover_group_tokens').selectAll().execute();
    return rows.map((row) => ({
      hash: row.hash,
      groupId: row.group_id,
      validUntil: row.valid_until === null ? null : Number(row.valid_until),
    }));
  }

  /** Whether a token with this hash is stored (another process may have made it). */
  async hasToken(hash: string): Promise<boolean> {
    return (await this.db.selectFrom('failover_group_tokens').select('hash').where('hash', '=', hash).executeTakeFirst()) !== undefined;
  }

  async insert(group: GroupRecord, tokenHash: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('failover_groups')
        .values({
          id: group.id,
          name: group.name,
          policy: group.policy,
          min_health: group.minHealth,
          sticky: group.sticky ? 1 : 0,
          webhook_url: group.webhookUrl,
          webhook_secret: group.webhookSecret,
          created_at: group.createdAt,
          updated_at: group.updatedAt,
        })
        .execute();
      await trx
        .insertInto('failover_group_members')
        .values(group.members.map((instanceId, position) => ({ group_id: group.id, instance_id: instanceId, position })))
        .execute();
      await trx
        .insertInto('failover_group_tokens')
        .values({ hash: tokenHash, group_id: group.id, valid_until: null, created_at: group.createdAt })
        .execute();
    });
  }

  async update(group: GroupRecord): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('failover_groups')
        .set({
          name: group.name,
          policy: group.policy,
          min_health: group.minHealth,
          sticky: group.sticky ? 1 : 0,
          webhook_url: group.webhookUrl,
          webhook_secret: group.webhookSecret,
          updated_at: group.updatedAt,
        })
        .where('id', '=', group.id)
        .execute();
      await trx.deleteFrom('failover_group_members').where('group_id', '=', group.id).execute();
      await trx
        .insertInto('failover_group_members')
        .values(group.members.map((instanceId, position) => ({ group_id: group.id, instance_id: instanceId, position })))
        .execute();
    });
  }

  /** Deletes the group and the deliveries still waiting for its webhook (no one will deliver them). */
  async delete(groupId: string, sink: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('outbox_pending').where('sink', '=', sink).execute();
      await trx.deleteFrom('failover_groups').where('id', '=', groupId).execute();
    });
  }

  /** The old primary token keeps working until `graceUntil`; tokens already past their grace go. */
  async rotateToken(groupId: string, newHash: string, graceUntil: number, now: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('failover_group_tokens').where('group_id', '=', groupId).where('valid_until', '<=', now).execute();
      await trx
        .updateTable('failover_group_tokens')
        .set({ valid_until: graceUntil })
        .where('group_id', '=', groupId)
        .where('valid_until', 'is', null)
        .execute();
      await trx
        .insertInto('failover_group_tokens')
        .values({ hash: newHash, group_id: groupId, valid_until: null, created_at: now })
        .execute();
    });
  }

  /** The latest sticky assignments, newest last (so a Map built from them keeps the newest). */
  async sticky(limit: number): Promise<{ groupId: string; recipient: string; instanceId: string }[]> {
    const rows = await this.db.selectFrom('failover_sticky').selectAll().orderBy('updated_at', 'desc').limit(limit).execute();
    return rows.reverse().map((row) => ({ groupId: row.group_id, recipient: row.recipient, instanceId: row.instance_id }));
  }

  async setSticky(groupId: string, recipient: string, instanceId: string, now: number): Promise<void> {
    await this.db
      .insertInto('failover_sticky')
      .values({ group_id: groupId, recipient, instance_id: instanceId, updated_at: now })
      .onConflict((oc) => oc.columns(['group_id', 'recipient']).doUpdateSet({ instance_id: instanceId, updated_at: now }))
      .execute();
  }

  /** Instance ids among `ids` that exist. */
  async existingInstances(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.selectFrom('instances').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((row) => row.id));
  }
}
