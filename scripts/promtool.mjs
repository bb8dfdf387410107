// promtool (Debian's prometheus package) checks the /metrics text in src/server/server.test.ts.
// Installed with apt when missing, like chromium; no Prometheus server is left running.
import { execSync } from 'node:child_process';
import fs from 'node:fs';

export const PROMTOOL = '/usr/bin/promtool';

/** Answers promtool's path, installing Debian's prometheus package first when it is absent. */
export function ensurePromtool(log = console.log) {
  if (fs.existsSync(PROMTOOL)) return PROMTOOL;
  log(`${PROMTOOL} is missing; installing Debian's prometheus package (for promtool)`);
  const install = 'DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus';
  execSync(`${install} || (apt-get update && ${install})`, { stdio: 'inherit', shell: '/bin/bash' });
  // Where an init system started the packaged server, stop it: only the checker is wanted.
  execSync('(systemctl stop prometheus || service prometheus stop || pkill -x prometheus) >/dev/null 2>&1 || true', { shell: '/bin/bash' });
  if (!fs.existsSync(PROMTOOL)) throw new Error(`promtool could not be installed at ${PROMTOOL}`);
  return PROMTOOL;
}
