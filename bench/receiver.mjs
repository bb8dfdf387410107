// A webhook receiver for the benchmarks: counts unique event ids and the time from the event's
// recording (envelope timestamp) to its arrival.
import http from 'node:http';

export class WebhookReceiverForBench {
  uniqueIds = new Set();
  latencies = [];
  lastArrival = 0;

  constructor() {
    this.server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const now = Date.now();
        this.lastArrival = now;
        const id = req.headers['x-webhook-event-id'];
        if (id && !this.uniqueIds.has(id)) {
          this.uniqueIds.add(id);
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString());
            if (body.timestamp) this.latencies.push(now - Date.parse(body.timestamp));
          } catch {
            /* not an envelope */
          }
        }
        res.writeHead(200).end('ok');
      });
    });
  }

  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}/hook`;
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
