// The browser of the end-to-end test (test/web.e2e.test.ts): Debian's chromium, driven by
// playwright-core. Installed with apt when missing, like the other local services.
import { execSync } from 'node:child_process';
import fs from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

/** Launch flags for a headless run on a server: no sandbox (root in a container), no network chatter. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Answers the browser's path, installing Debian's chromium first when it is absent. */
export function ensureChromium(log = console.log) {
  if (fs.existsSync(CHROMIUM)) return CHROMIUM;
  log(`${CHROMIUM} is missing; installing Debian's chromium`);
  execSync('apt-get install -y chromium || (apt-get update && apt-get install -y chromium)', { stdio: 'inherit', shell: '/bin/bash' });
  if (!fs.existsSync(CHROMIUM)) throw new Error(`chromium could not be installed at ${CHROMIUM}`);
  return CHROMIUM;
}

/** The newest modification time (ms) of a file or of the files under a folder. */
function newestMtime(target) {
  const stat = fs.statSync(target, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...fs.readdirSync(target).map((name) => newestMtime(`${target}/${name}`)));
}

/**
 * Builds the web interface when web/dist is missing or older than its sources (the e2e test serves
 * it; a stale build would test yesterday's interface). The sources include the module web/src shares
 * with the gateway.
 */
export function ensureWebBuilt(root, log = console.log) {
  const built = fs.statSync(`${root}/web/dist/index.html`, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = ['web/src', 'web/index.html', 'web/vite.config.mjs', 'src/vocabulary.ts'];
  if (built > 0 && sources.every((source) => newestMtime(`${root}/${source}`) <= built)) return;
  log(built > 0 ? 'web/dist is older than web/src; building the web interface' : 'web/dist is missing; building the web interface');
  execSync('npm run build:web', { stdio: 'inherit', cwd: root });
}
