/** The media store on an S3-compatible service (AWS S3, MinIO, R2, ...), through @aws-sdk/client-s3. */
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  NoSuchKey,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { S3Config } from '../config.js';
import type { MediaEntry, MediaStore } from './store.js';

function isMissing(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return error instanceof NoSuchKey || status === 404 || (error as { name?: string }).name === 'NoSuchKey';
}

export class S3MediaStore implements MediaStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;

  constructor(
    private readonly config: S3Config,
    private readonly log: FastifyBaseLogger,
  ) {
    this.client = new S3Client({
      region: config.region,
      forcePathStyle: config.forcePathStyle,
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      ...(config.accessKeyId && config.secretAccessKey
        ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }
        : {}),
      // Checksums only where S3 requires them: many S3-compatible services reject the newer
      // default checksum headers and aws-chunked uploads.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  /** Creates the bucket when it does not exist yet (convenient with MinIO and friends). */
  async start(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.config.bucket }));
    } catch (error) {
      if (!isMissing(error)) {
        this.log.error({ err: error, bucket: this.config.bucket }, 'S3 media store is not reachable');
        return;
      }
      try {
        await this.client.send(new CreateBucketCommand({ Bucket: this.config.bucket }));
        this.log.info({ bucket: this.config.bucket }, 'created the S3 media bucket');
      } catch (createError) {
        this.log.error({ err: createError, bucket: this.config.bucket }, 'could not create the S3 media bucket');
      }
    }
  }

  async put(key: string, data: Buffer, mimetype: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.config.bucket,
        Key: this.objectKey(key),
        Body: data,
        ContentType: mimetype,
        ContentLength: data.length,
      }),
    );
  }

  async read(key: string): Promise<Buffer | undefined> {
    const body = await this.stream(key);
    if (!body) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async stream(key: string): Promise<Readable | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.objectKey(key) }));
      return object.Body as Readable | undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000).map((key) => ({ Key: this.objectKey(key) }));
      if (batch.length > 0)
        await this.client.send(new DeleteObjectsCommand({ Bucket: this.config.bucket, Delete: { Objects: batch, Quiet: true } }));
    }
  }

  async deletePrefix(prefix: string): Promise<void> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: this.objectKey(prefix), ContinuationToken: token }),
      );
      const objects = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
      if (objects.length > 0)
        await this.client.send(new DeleteObjectsCommand({ Bucket: this.config.bucket, Delete: { Objects: objects, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async *list(): AsyncIterable<MediaEntry[]> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: this.config.prefix || undefined, ContinuationToken: token }),
      );
      yield (page.Contents ?? []).flatMap((o) =>
        o.Key?.startsWith(this.config.prefix)
          ? [{ key: o.Key.slice(this.config.prefix.length), modifiedAt: o.LastModified?.getTime() ?? 0 }]
          : [],
      );
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  close(): Promise<void> {
    this.client.destroy();
    return Promise.resolve();
  }

  private objectKey(key: string): string {
    return `${this.config.prefix}${key}`;
  }
}
