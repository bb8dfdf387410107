// Whether the build in dist/ is the build of the sources as they are now: a hash of the sources,
// written to dist/.sources-hash by the build (scripts/start.mjs). `npm start` builds when it is not;
// the tests start child gateways from dist/main.js when it is (test/support/process.ts).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
export const STAMP = path.join(root, 'dist', '.sources-hash');
/** What the build reads: the server's and the web interface's sources and their build settings. */
const SOURCES = ['src', 'web/src', 'web/index.html', 'web/vite.config.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function filesUnder(entry) {
  const full = path.join(root, entry);
  if (!fs.existsSync(full)) return [];
  if (!fs.statSync(full).isDirectory()) return [entry];
  return fs
    .readdirSync(full, { withFileTypes: true })
    .flatMap((child) => filesUnder(path.join(entry, child.name)))
    .filter((file) => !file.endsWith('.test.ts'));
}

export function sourcesHash() {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap(filesUnder).sort()) {
    hash
      .update(file)
      .update('\0')
      .update(fs.readFileSync(path.join(root, file)))
      .update('\0');
  }
  return hash.digest('hex');
}

/** dist/ holds the server and the web interface built from the sources as they are (`hash`). */
export function isBuilt(hash = sourcesHash()) {
  return (
    fs.existsSync(path.join(root, 'dist', 'main.js')) &&
    fs.existsSync(path.join(root, 'web', 'dist', 'index.html')) &&
    fs.existsSync(STAMP) &&
    fs.readFileSync(STAMP, 'utf8') === hash
  );
}
