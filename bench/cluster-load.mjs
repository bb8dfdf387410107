// The cluster figure's load (bench/cluster.mjs), in its own process: POST /api/v1/send/text with
// the tokens of every instance, on every gateway process's port at once (one autocannon run per port,
// the connections split between them). Each request picks a random instance; it counts as forwarded
// when the port it goes to is not its owner's (the owners read from the leases before the load).
// Input: a JSON file (argv[2]) { ports, instances: [{ token, port }], connections, duration, number }.
// Output: one JSON line on stdout.
import fs from 'node:fs';
import autocannon from 'autocannon';

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { ports, instances, connections, duration, number } = config;
const body = JSON.stringify({ number, text: 'cluster benchmark' });
const latencies = [];

function runOn(port) {
  const picks = { local: 0, forwarded: 0 };
  /** Requests picked per owner's port. */
  const byOwner = Object.fromEntries(ports.map((p) => [p, 0]));
  return new Promise((resolve, reject) => {
    const tracker = autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections: Math.max(1, Math.round(connections / ports.length)),
        duration,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/send/text',
            body,
            setupRequest(request) {
              const instance = instances[Math.floor(Math.random() * instances.length)];
              if (instance.port === port) picks.local += 1;
              else picks.forwarded += 1;
              byOwner[instance.port] = (byOwner[instance.port] ?? 0) + 1;
              request.headers = { 'content-type': 'application/json', apikey: instance.token };
              return request;
            },
          },
        ],
      },
      (error, result) => {
        if (error) reject(error);
        else
          resolve({
            port,
            requestsPerSec: Math.round(result.requests.average),
            p50Ms: result.latency.p50,
            p99Ms: result.latency.p99,
            errors: (result.errors ?? 0) + (result.timeouts ?? 0) + (result.non2xx ?? 0),
            total2xx: result['2xx'] ?? 0,
            forwardedShare: picks.local + picks.forwarded ? picks.forwarded / (picks.local + picks.forwarded) : 0,
            ownerShare: Object.fromEntries(Object.entries(byOwner).map(([p, n]) => [p, n / Math.max(1, picks.local + picks.forwarded)])),
          });
      },
    );
    tracker.on('response', (_client, _status, _bytes, ms) => latencies.push(ms));
  });
}

const perPort = await Promise.all(ports.map(runOn));
latencies.sort((a, b) => a - b);
const at = (q) =>
  latencies.length ? Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] * 10) / 10 : null;
const total2xx = perPort.reduce((sum, run) => sum + run.total2xx, 0);
console.log(
  JSON.stringify({
    requestsPerSec: perPort.reduce((sum, run) => sum + run.requestsPerSec, 0),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    errors: perPort.reduce((sum, run) => sum + run.errors, 0),
    total2xx,
    // Weighted by what each port answered.
    forwardedShare: total2xx ? perPort.reduce((sum, run) => sum + run.forwardedShare * run.total2xx, 0) / total2xx : 0,
    perPort,
  }),
);
