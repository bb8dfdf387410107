/**
 * Lints the OpenAPI document the gateway serves with two tools nobody here wrote: Redocly
 * (redocly.yaml: recommended rules, warnings are errors) and Spectral (.spectral.yaml: spectral:oas,
 * failing on warnings). A step of the test command; exits non-zero on any problem either finds.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from './openapi-document.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, '.test-data', 'openapi.json');
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, JSON.stringify(await buildOpenApiDocument(), null, 2));

const bin = (name: string) => path.join(root, 'node_modules', '.bin', name);
let failed = false;
for (const [tool, args] of [
  ['redocly', ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'stylish', '--max-problems', '1000']],
  ['spectral', ['lint', file, '--ruleset', path.join(root, '.spectral.yaml'), '--fail-severity', 'warn', '--format', 'text']],
] as const) {
  const result = spawnSync(bin(tool), [...args], { cwd: root, encoding: 'utf8' });
  // Redocly prints a notice about Node 20's end of life in a box; the findings are what matter.
  const output = `${result.stdout}${result.stderr}`.replace(/^\s*[╔║╚].*$/gm, '').trim();
  console.log(`${tool}: ${result.status === 0 ? 'no problems' : 'problems found'}`);
  if (result.status !== 0) {
    console.log(output);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
