#!/usr/bin/env node
// The long fuzz run: test/fuzz.test.ts with FUZZ_RUNS requests (default 50,000; `npm run fuzz -- 100000`).
import { spawnSync } from 'node:child_process';

const runs = process.argv[2] ?? process.env.FUZZ_RUNS ?? '50000';
if (!/^\d+$/.test(runs)) {
  console.error(`usage: npm run fuzz [-- <requests>]  (got "${runs}")`);
  process.exit(2);
}
const result = spawnSync('npx', ['vitest', 'run', 'test/fuzz.test.ts'], {
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: runs },
});
process.exit(result.status ?? 1);
