/** A real HTTP webhook receiver: records every request and answers as the test tells it. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  readonly signatureValid: boolean;
  at: number;
}

export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** Status codes to answer, in order; when empty, `defaultStatus`. */
  readonly script: number[] = [];
  defaultStatus = 200;
  /** Answer after this many milliseconds (a slow receiver). */
  delayMs = 0;
  private server: http.Server;

  constructor(private secret?: string) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const given = String(req.headers['x-webhook-signature'] ?? '');
        // Checked against the receiver's current secret when read, as a receiver would on arrival.
        const verify = () => {
          if (!this.secret) return false;
          const expected = createHmac('sha256', this.secret).update(body).digest('hex');
          return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
        };
        let json: any;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        this.requests.push({
          headers: req.headers,
          body,
          json,
          get signatureValid() {
            return verify();
          },
          at: Date.now(),
        });
        const status = this.script.length > 0 ? this.script.shift()! : this.defaultStatus;
        const answer = () => res.writeHead(status, { 'content-type': 'text/plain' }).end(String(status));
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      });
    });
  }

  setSecret(secret: string): void {
    this.secret = secret;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/hook`;
  }

  events(type?: string): any[] {
    return this.requests.map((r) => r.json).filter((j) => j && (!type || j.event === type));
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
