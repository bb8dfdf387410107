// The whole test suite: starts any stopped local service, type-checks, lints, runs vitest, and ends
// with one line "N passed, N failed" from the run's real counts (CI reads that line).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { ensureChromium } from './chromium.mjs';
import { ensureNginx } from './nginx.mjs';
import { ensurePromtool } from './promtool.mjs';
import { ensureServices } from './services.mjs';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);
fs.mkdirSync('.test-data', { recursive: true });
const report = '.test-data/vitest-report.json';
fs.rmSync(report, { force: true });

/** The code Prettier keeps in one format (docs and data are left as written). */
const FORMATTED = [
  'src/**/*.ts',
  'test/**/*.ts',
  'scripts/**/*.{mjs,mts,ts}',
  'bench/**/*.mjs',
  'web/src/**/*.{ts,tsx}',
  'packages/*/{src,test,bin,examples}/**/*.{js,mjs,ts}',
  '*.{js,ts}',
];

let failed = 0;
let passed = 0;

const missing = await ensureServices();
if (missing.length > 0) {
  console.error(`services not available: ${missing.join(', ')}`);
  failed += missing.length;
}

// The browser of test/web.e2e.test.ts, the metrics checker of src/server/server.test.ts, and the
// load balancer of test/deployment.e2e.test.ts.
for (const ensure of [ensureChromium, ensurePromtool, ensureNginx]) {
  try {
    ensure();
  } catch (error) {
    console.error(error.message);
    failed += 1;
  }
}

function step(name, command, args) {
  console.log(`\n== ${name}: ${command} ${args.join(' ')}`);
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status === 0) {
    passed += 1;
    return true;
  }
  console.error(`${name} failed (exit ${result.status})`);
  failed += 1;
  return false;
}

step('typecheck', 'npx', ['tsc', '--noEmit']);

step('lint', 'npx', ['eslint', '.']);
// The OpenAPI document the gateway serves, linted by Redocly and Spectral: 0 errors, 0 warnings.
step('openapi lint', 'npx', ['tsx', 'scripts/openapi-lint.ts']);
// One format: Prettier's (.prettierrc) over the code; `npm run format` rewrites it.
step('format', 'npx', ['prettier', '--check', ...FORMATTED]);
// The web interface: its own type check (DOM, JSX).
step('web typecheck', 'npx', ['tsc', '-p', 'web/tsconfig.json']);
// What `npm start` runs: the production subset (no tests, no fixtures) and the web interface, built
// when their sources changed (test/start.test.ts then starts it; the browser test uses web/dist).
step('build', 'node', ['scripts/start.mjs', '--build-only']);

const extra = process.argv.slice(2);
const vitest = spawnSync('npx', ['vitest', 'run', ...extra], { stdio: 'inherit' });
if (fs.existsSync(report)) {
  const json = JSON.parse(fs.readFileSync(report, 'utf8'));
  passed += json.numPassedTests ?? 0;
  failed += json.numFailedTests ?? 0;
  // A file that failed to load (syntax error, failing hook) has no failed test of its own: count it.
  failed += (json.testResults ?? []).filter(
    (file) => file.status === 'failed' && !(file.assertionResults ?? []).some((t) => t.status === 'failed'),
  ).length;
  if ((json.numTotalTests ?? 0) === 0) {
    console.error('vitest ran no test');
    failed += 1;
  }
} else {
  console.error('vitest wrote no report');
  failed += 1;
}
if (vitest.status !== 0 && failed === 0) failed = 1;

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
