/** Builds the configured media store. */
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { LocalMediaStore, type MediaStore } from './store.js';

export async function createMediaStore(config: Config, log: FastifyBaseLogger): Promise<MediaStore> {
  if (!config.s3) return new LocalMediaStore(path.join(config.dataDir, 'media'));
  // The AWS SDK is loaded only by gateways that use S3.
  const { S3MediaStore } = await import('./s3-store.js');
  return new S3MediaStore(config.s3, log);
}
