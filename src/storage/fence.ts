/**
 * Writes only an instance's owner may make (cluster mode, src/cluster/): its outbox rows, its
 * connection state, its WhatsApp keys. A fence runs first in the write's transaction and answers
 * which of the instances this process no longer owns at the epoch it holds; it also locks the
 * lease rows it read, so an owner change waits for the write to commit (or the write sees it).
 * Without a cluster there is no fence and every write goes through.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export type WriteFence = (trx: Kysely<Database>, instanceIds: string[]) => Promise<string[]>;

/** A write refused because this process no longer owns these instances (another one took them over). */
export class StaleOwnerError extends Error {
  constructor(readonly instanceIds: string[]) {
    super(`this process no longer owns instance(s) ${instanceIds.join(', ')}; the write was refused`);
    this.name = 'StaleOwnerError';
  }
}

/** Runs `fence` (when there is one) and throws StaleOwnerError when any instance is stale. */
export async function passFence(fence: WriteFence | undefined, trx: Kysely<Database>, instanceIds: string[]): Promise<void> {
  if (!fence || instanceIds.length === 0) return;
  const stale = await fence(trx, instanceIds);
  if (stale.length > 0) throw new StaleOwnerError(stale);
}
