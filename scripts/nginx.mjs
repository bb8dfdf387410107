// nginx (Debian's package) in front of two gateways in test/deployment.e2e.test.ts, which runs the
// configuration printed in docs/deployment.md. Installed with apt when missing, like chromium; the
// packaged server the install may start is stopped again: the test runs its own nginx.
import { execSync } from 'node:child_process';
import fs from 'node:fs';

export const NGINX = '/usr/sbin/nginx';

/** Answers nginx's path, installing Debian's nginx-light (or nginx) first when it is absent. */
export function ensureNginx(log = console.log) {
  if (fs.existsSync(NGINX)) return NGINX;
  log(`${NGINX} is missing; installing Debian's nginx`);
  const install = (name) => `DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${name}`;
  const either = `(${install('nginx-light')} || ${install('nginx')})`;
  execSync(`${either} || (apt-get update && ${either})`, { stdio: 'inherit', shell: '/bin/bash' });
  // Where the package started its own server (port 80), stop it by its pid file: only the binary is wanted.
  execSync(`(service nginx stop || ${NGINX} -s quit) >/dev/null 2>&1 || true`, { shell: '/bin/bash' });
  if (!fs.existsSync(NGINX)) throw new Error(`nginx could not be installed at ${NGINX}`);
  return NGINX;
}
