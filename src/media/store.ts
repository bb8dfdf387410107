/**
 * Where media bytes live: one interface, a local folder under DATA_DIR by default or an
 * S3-compatible bucket when S3_BUCKET is set. Keys look like `<instanceId>/<name>`, so an instance's
 * media can be removed with it.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';

export interface MediaStore {
  readonly kind: 'local' | 's3';
  /** Prepares the store (folder, bucket); a failure is reported, not thrown, so the gateway still starts. */
  start(): Promise<void>;
  put(key: string, data: Buffer, mimetype: string): Promise<void>;
  /** The bytes, or undefined when the key is unknown. */
  read(key: string): Promise<Buffer | undefined>;
  /** A stream of the bytes, or undefined when the key is unknown. */
  stream(key: string): Promise<Readable | undefined>;
  delete(keys: string[]): Promise<void>;
  /** Removes every object whose key starts with `prefix` (e.g. `<instanceId>/`). */
  deletePrefix(prefix: string): Promise<void>;
  /** Every stored key with its last change (ms), in pages; for the orphan sweep. */
  list(): AsyncIterable<MediaEntry[]>;
  close(): Promise<void>;
}

export interface MediaEntry {
  key: string;
  modifiedAt: number;
}

/**
 * Keys are made of safe path segments only; anything else in a message id is hex-encoded, and an
 * id whose hex would pass 200 characters is named by its SHA-256 instead (never cut short, so two
 * long ids with the same beginning cannot share a file).
 */
export function mediaKey(instanceId: string, name: string): string {
  if (/^[A-Za-z0-9._-]{1,128}$/.test(name) && !name.startsWith('.')) return `${instanceId}/${name}`;
  const hex = Buffer.from(name).toString('hex');
  return `${instanceId}/${hex.length <= 200 ? `x${hex}` : `h${createHash('sha256').update(name).digest('hex')}`}`;
}

function checkKey(key: string): void {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*\/[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(key)) throw new Error(`invalid media key ${key}`);
}

export class LocalMediaStore implements MediaStore {
  readonly kind = 'local' as const;

  constructor(private readonly root: string) {}

  async start(): Promise<void> {
    await fs.promises.mkdir(this.root, { recursive: true });
  }

  async put(key: string, data: Buffer): Promise<void> {
    const file = this.file(key);
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    // Written aside and renamed, so a reader never sees half a file.
    const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    await fs.promises.writeFile(temporary, data);
    await fs.promises.rename(temporary, file);
  }

  async read(key: string): Promise<Buffer | undefined> {
    try {
      return await fs.promises.readFile(this.file(key));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async stream(key: string): Promise<Readable | undefined> {
    const file = this.file(key);
    try {
      const handle = await fs.promises.open(file, 'r');
      return handle.createReadStream();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async delete(keys: string[]): Promise<void> {
    await Promise.all(keys.map((key) => fs.promises.rm(this.file(key), { force: true })));
  }

  async deletePrefix(prefix: string): Promise<void> {
    const folder = prefix.replace(/\/$/, '');
    if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(folder)) throw new Error(`invalid media prefix ${prefix}`);
    await fs.promises.rm(path.join(this.root, folder), { recursive: true, force: true });
  }

  async *list(): AsyncIterable<MediaEntry[]> {
    let folders: string[];
    try {
      folders = await fs.promises.readdir(this.root);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const folder of folders) {
      let names: string[];
      try {
        names = await fs.promises.readdir(path.join(this.root, folder));
      } catch {
        continue; // not a folder, or removed meanwhile
      }
      const page: MediaEntry[] = [];
      for (const name of names) {
        const stat = await fs.promises.stat(path.join(this.root, folder, name)).catch(() => undefined);
        if (stat?.isFile()) page.push({ key: `${folder}/${name}`, modifiedAt: stat.mtimeMs });
      }
      if (page.length > 0) yield page;
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private file(key: string): string {
    checkKey(key);
    return path.join(this.root, ...key.split('/'));
  }
}
