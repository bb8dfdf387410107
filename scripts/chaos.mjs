#!/usr/bin/env node
// The long chaos run: test/chaos.test.ts with CHAOS_ROUNDS SIGKILLs per database (default 12, so 24
// in all; `npm run chaos -- 30` for another number), and test/chaos-environment.test.ts (PostgreSQL
// restarted, media folder full). The test command runs the same files, with 2 kills per database.
import { spawnSync } from 'node:child_process';

const rounds = process.argv[2] ?? process.env.CHAOS_ROUNDS ?? '12';
if (!/^\d+$/.test(rounds) || Number(rounds) < 1) {
  console.error(`usage: npm run chaos [-- <kills per database>]  (got "${rounds}")`);
  process.exit(2);
}
const result = spawnSync('npx', ['vitest', 'run', 'test/chaos.test.ts', 'test/chaos-environment.test.ts'], {
  stdio: 'inherit',
  env: { ...process.env, CHAOS_ROUNDS: rounds },
});
process.exit(result.status ?? 1);
