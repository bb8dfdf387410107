// A webhook receiver for the benchmarks: counts unique event ids (single envelopes and batched
// arrays alike), the time from the event's recording (envelope timestamp) to its arrival, and
// checks each instance's `seq`: gaps and out-of-order arrivals are counted, never expected.
import http from 'node:http';

export class WebhookReceiverForBench {
  uniqueIds = new Set();
  latencies = [];
  /** The envelope timestamp (ms) of each entry of `latencies`, to leave a warm-up's events out. */
  recordedAt = [];
  lastArrival = 0;
  posts = 0;
  seqGaps = 0;
  outOfOrder = 0;
  /** instanceId -> the highest seq seen. */
  lastSeq = new Map();
  /** While true, answers wait (a receiver that is down or slow: the backlog grows in the outbox). */
  held = false;
  waiting = [];

  constructor() {
    this.server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const answer = () => {
          this.record(Buffer.concat(chunks).toString());
          res.writeHead(200).end('ok');
        };
        if (this.held) this.waiting.push(answer);
        else answer();
      });
    });
  }

  record(text) {
    const now = Date.now();
    this.lastArrival = now;
    this.posts += 1;
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return;
    }
    for (const envelope of Array.isArray(body) ? body : [body]) {
      if (!envelope?.eventId || this.uniqueIds.has(envelope.eventId)) continue;
      this.uniqueIds.add(envelope.eventId);
      if (envelope.timestamp) {
        const recorded = Date.parse(envelope.timestamp);
        this.latencies.push(now - recorded);
        this.recordedAt.push(recorded);
      }
      if (typeof envelope.seq === 'number') {
        const last = this.lastSeq.get(envelope.instanceId) ?? 0;
        if (envelope.seq < last) this.outOfOrder += 1;
        else {
          if (last > 0 && envelope.seq > last + 1) this.seqGaps += envelope.seq - last - 1;
          this.lastSeq.set(envelope.instanceId, envelope.seq);
        }
      }
    }
  }

  /**
   * Waits until `expected` events arrived since the receiver had `before`, or none arrived for
   * `quietMs`, or `maxMs` passed (a drain after a load). Resolves with the count since `before`.
   */
  async drain(before, expected, { quietMs = 3000, maxMs = 30_000 } = {}) {
    const started = Date.now();
    let last = -1;
    let quietSince = started;
    while (Date.now() - started < maxMs) {
      const seen = this.uniqueIds.size - before;
      if (seen >= expected) break;
      if (seen !== last) {
        last = seen;
        quietSince = Date.now();
      } else if (Date.now() - quietSince > quietMs) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return this.uniqueIds.size - before;
  }

  hold() {
    this.held = true;
  }

  release() {
    this.held = false;
    for (const answer of this.waiting.splice(0)) answer();
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
