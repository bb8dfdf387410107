/** Media for tests: real sample files, a local HTTP media server, and a real S3-compatible server. */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import S3rver from 's3rver';

export interface Samples {
  png: Buffer;
  jpeg: Buffer;
  gif: Buffer;
  webp: Buffer;
  /** An OGG container with an Opus stream header: what voice notes are. */
  opus: Buffer;
  /** OGG/Vorbis: audio, but not a voice note. */
  vorbis: Buffer;
  mp4: Buffer;
  pdf: Buffer;
  csv: Buffer;
}

function ogg(codecHeader: string): Buffer {
  // One OGG page: "OggS", version 0, BOS flag, one segment holding the codec's identification header.
  const page = Buffer.alloc(28 + 19 + 40);
  page.write('OggS', 0, 'latin1');
  page[5] = 0x02;
  page[26] = 1;
  page[27] = 19;
  page.write(codecHeader, 28, 'latin1');
  return page;
}

export async function makeSamples(): Promise<Samples> {
  const base = sharp({ create: { width: 64, height: 48, channels: 4, background: { r: 20, g: 140, b: 90, alpha: 1 } } });
  const png = await base.clone().png().toBuffer();
  return {
    png,
    jpeg: await sharp(png).jpeg().toBuffer(),
    gif: await sharp(png).gif().toBuffer(),
    webp: await sharp(png).resize(512, 512).webp().toBuffer(),
    opus: ogg('OpusHead\x01\x02\x38\x01\x80\xbb\x00\x00\x00\x00\x00'),
    vorbis: ogg('\x01vorbis\x00\x00\x00\x00\x02\x44\xac\x00\x00'),
    mp4: Buffer.concat([
      Buffer.from([0, 0, 0, 0x18]),
      Buffer.from('ftypmp42'),
      Buffer.from([0, 0, 0, 0]),
      Buffer.from('mp42isom'),
      Buffer.alloc(64),
    ]),
    pdf: Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n', 'latin1'),
    csv: Buffer.from('name,amount\nana,10\nbruno,20\n'),
  };
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** An HTTP server on a loopback address that serves what each test puts on it. */
export class MediaServer {
  private readonly routes = new Map<string, Handler>();
  private readonly server = http.createServer((req, res) => {
    const handler = this.routes.get((req.url ?? '/').split('?')[0]!);
    if (handler) handler(req, res);
    else res.writeHead(404).end('not found');
  });

  constructor(private readonly host = '127.0.0.1') {}

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, this.host, resolve));
  }

  get origin(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://${this.host}:${port}`;
  }

  /** Serves `body` at `route` and returns its URL. */
  file(route: string, body: Buffer, contentType = 'application/octet-stream'): string {
    this.routes.set(route, (_req, res) => res.writeHead(200, { 'content-type': contentType, 'content-length': body.length }).end(body));
    return `${this.origin}${route}`;
  }

  /** Streams `size` bytes without announcing a length (the size cap must hold while reading). */
  unannounced(route: string, size: number): string {
    this.routes.set(route, (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(16 * 1024, 1);
      let left = size;
      const push = () => {
        while (left > 0) {
          const piece = chunk.subarray(0, Math.min(chunk.length, left));
          left -= piece.length;
          if (!res.write(piece)) return res.once('drain', push);
        }
        res.end();
      };
      push();
    });
    return `${this.origin}${route}`;
  }

  redirect(route: string, location: string): string {
    this.routes.set(route, (_req, res) => res.writeHead(302, { location }).end());
    return `${this.origin}${route}`;
  }

  status(route: string, code: number): string {
    this.routes.set(route, (_req, res) => res.writeHead(code).end('no'));
    return `${this.origin}${route}`;
  }

  /** Never answers (until the server stops). */
  hang(route: string): string {
    this.routes.set(route, () => undefined);
    return `${this.origin}${route}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface S3Server {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  directory: string;
  stop(): Promise<void>;
}

/** A real S3-compatible server (s3rver) on a free loopback port, storing in a temporary folder. */
export async function startS3(): Promise<S3Server> {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    // s3rver's fixed development credentials.
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    directory,
    async stop() {
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
