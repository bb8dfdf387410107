/**
 * Media files that no message points at: a crash between writing the bytes and saving the message
 * row (or a write that finished after its deadline, src/sending/recorder.ts) leaves them behind, as
 * does a crash mid-write (`*.tmp`). The sweep removes keys older than a safe age (a message row is
 * saved within moments of its file) that no stored message references.
 */
import type { MediaStore } from './store.js';

/** Which of these keys a stored message still references. */
export type ReferencedKeys = (keys: string[]) => Promise<Set<string>>;

export async function sweepOrphanMedia(store: MediaStore, referenced: ReferencedKeys, olderThan: number): Promise<number> {
  let removed = 0;
  for await (const page of store.list()) {
    const old = page.filter((entry) => entry.modifiedAt < olderThan).map((entry) => entry.key);
    for (let i = 0; i < old.length; i += 500) {
      const keys = old.slice(i, i + 500);
      const kept = await referenced(keys);
      const orphans = keys.filter((key) => !kept.has(key));
      if (orphans.length > 0) await store.delete(orphans);
      removed += orphans.length;
    }
  }
  return removed;
}
