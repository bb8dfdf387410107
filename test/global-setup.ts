// Runs once before the suite: the local services must be up (CI must fail, not skip, without them).
import { ensureServices } from '../scripts/services.mjs';

export default async function setup(): Promise<void> {
  const missing = await ensureServices(() => undefined);
  if (missing.length > 0) throw new Error(`local services not available: ${missing.join(', ')}`);
}
