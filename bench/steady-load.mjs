// A steady, open-loop load: requests start at an even pace (`rate` per second) whatever the answers
// do, over up to `connections` keep-alive connections, and each latency is measured from the moment
// the request was due, so time spent waiting for a free connection counts (no coordinated omission).
//
// Why not autocannon -R: it lets each connection send its whole per-second quota back to back at the
// start of every second and then pause, so "half load" is a saturating burst half of each second,
// and its latency correction (an expected interval rounded up to 1 ms) adds a synthetic sample per
// millisecond of every slow answer. Both made the half-load p99 a figure of the generator.
//
// `warmup` (s): the same load first, over the same connections, left out of every figure. A new
// generator opens its connections and compiles its own code in its first second; measured, that
// start (up to ~150 ms late answers against a bare route) made the p99 of a 10 s load.
//
// Usage: node bench/steady-load.mjs '<json options>'  ->  one JSON line on stdout.
// Options: url, method, headers, body (string), rate, duration (s), connections, warmup (s).
import { Pool } from 'undici';

const options = JSON.parse(process.argv[2]);
const { url, method = 'POST', headers = {}, body, rate, duration, connections = 64, warmup = 0 } = options;
const target = new URL(url);
const pool = new Pool(target.origin, { connections, pipelining: 1, keepAliveTimeout: 30_000 });
const path = target.pathname + target.search;

const warm = Math.round(rate * warmup);
const total = warm + Math.round(rate * duration);
const interval = 1000 / rate;
/** Latencies of the measured requests (index - warm); warm-up answers are only counted as answered. */
const latencies = new Float64Array(total - warm);
let answered = 0;
let ok = 0;
let warmOk = 0;
let errors = 0;
let done;
const finished = new Promise((resolve) => (done = resolve));

function fire(index, dueAt) {
  pool
    .request({ path, method, headers, body })
    .then(async (res) => {
      await res.body.dump();
      if (index < warm) {
        if (res.statusCode >= 200 && res.statusCode < 300) warmOk += 1;
        return;
      }
      if (res.statusCode >= 200 && res.statusCode < 300) ok += 1;
      else errors += 1;
    })
    .catch(() => {
      if (index >= warm) errors += 1;
    })
    .finally(() => {
      if (index >= warm) latencies[index - warm] = performance.now() - dueAt;
      answered += 1;
      if (answered === total) done();
    });
}

const start = performance.now();
const measuredFrom = Date.now() + warm * interval;
let next = 0;
function tick() {
  const now = performance.now();
  // Every request due by now starts now; each keeps its own due time for its latency.
  while (next < total && start + next * interval <= now) {
    fire(next, start + next * interval);
    next += 1;
  }
  if (next < total) setTimeout(tick, Math.max(0, start + next * interval - performance.now()));
}
tick();
await finished;
const elapsed = (performance.now() - start) / 1000 - warmup;
await pool.close();

const sorted = Array.from(latencies).sort((a, b) => a - b);
const at = (q) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] * 10) / 10;
console.log(
  JSON.stringify({
    offeredPerSec: rate,
    requestsPerSec: Math.round(ok / elapsed),
    p50Ms: at(0.5),
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    maxMs: at(1),
    errors,
    total2xx: ok,
    ...(warm > 0 ? { warmup2xx: warmOk, measuredFromEpochMs: Math.round(measuredFrom) } : {}),
  }),
);
