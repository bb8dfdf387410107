/** The admin key: GLOBAL_API_KEY, or one generated at first start and kept in the data folder. */
import fs from 'node:fs';
import path from 'node:path';
import { randomToken } from './clock.js';

export interface AdminKey {
  key: string;
  /** True when it was generated just now (the caller prints it once). */
  generated: boolean;
  file?: string;
}

export function resolveAdminKey(configured: string | undefined, dataDir: string): AdminKey {
  if (configured !== undefined) return { key: configured, generated: false };
  const file = path.join(dataDir, 'admin-key');
  if (fs.existsSync(file)) {
    const key = fs.readFileSync(file, 'utf8').trim();
    if (key.length >= 16) return { key, generated: false, file };
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const key = `wga_${randomToken(32)}`;
  fs.writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return { key, generated: true, file };
}
