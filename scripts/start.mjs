#!/usr/bin/env node
// `npm start`: runs the built server (dist/main.js), building it first only when its sources changed
// since the last build (a hash of the sources, kept in dist/.sources-hash). Everything it prints is a
// JSON log line like the server's own, so a log shipper reading stdout sees one format; the build's
// own output is shown (inside a log line) only when the build fails. `--build-only` builds (when
// needed) and stops there: the test command runs it before the tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isBuilt, sourcesHash, STAMP } from './build-state.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

/** A pino-shaped line (level 30 info, 50 error), so the start script's notices read like the server's. */
function log(level, msg, fields = {}) {
  process.stdout.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, hostname: os.hostname(), ...fields, msg })}\n`);
}

function run(step, command, args) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8' });
  if (result.status === 0) return;
  log(50, `the ${step} failed; the server was not started`, { output: `${result.stdout ?? ''}${result.stderr ?? ''}`.slice(-8000) });
  process.exit(1);
}

const hash = sourcesHash();
const built = isBuilt(hash);
if (!built) {
  const started = Date.now();
  log(30, 'building the server and the web interface (first start, or their sources changed)');
  const bin = (name) => path.join(root, 'node_modules', '.bin', name);
  run('server build', bin('tsc'), ['-p', 'tsconfig.build.json']);
  run('web interface build', bin('vite'), ['build', '--config', 'web/vite.config.mjs', '--logLevel', 'error']);
  fs.writeFileSync(STAMP, hash);
  log(30, 'built', { ms: Date.now() - started });
}
if (!process.argv.includes('--build-only')) await import(pathToFileURL(path.join(root, 'dist', 'main.js')).href);
