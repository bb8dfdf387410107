/**
 * Writes docs/errors.md from the error registry (src/errors.ts): `npx tsx scripts/errors-doc.ts`.
 * src/http/errors.test.ts fails when the page and the registry differ.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODE_LIST, ERROR_CODES } from '../src/errors.js';

const rows = ERROR_CODE_LIST.map(
  (code) => `| \`${code}\` | ${ERROR_CODES[code].status} | ${ERROR_CODES[code].meaning.replace(/\|/g, '\\|')} |`,
);

const page = `# Errors

Every error answer is JSON with a human-readable \`error\` and a stable machine-readable \`code\`:

\`\`\`json
{ "error": "instance is not connected (status created); connect it first", "code": "instance_not_connected" }
\`\`\`

- \`error\` keeps SPEC's exact texts: \`invalid api key\`, \`token expired, please use the new token\`,
  \`rate limit exceeded\`. Other texts may change between versions; match on \`code\`.
- Some codes add fields: \`validation_failed\` has \`details\` (every problem found in the body, query
  or path, at most 20; \`error\` is the first), \`rate_limited\` has \`retryAfter\` (seconds, also in
  the \`Retry-After\` header), and so has \`instance_moving\` (cluster mode, docs/deployment.md).
- The same code always comes with the same status, except \`request_rejected\`, which keeps the
  status the HTTP layer chose (e.g. 414).
- A refusal by WhatsApp is mapped the same way on every route (\`/send\`, \`/message\`, \`/group\`, ...):
  its 403/401 is \`forbidden\`, 404/410 \`not_found\`, 400/406 \`bad_request\`, 409/419 \`conflict\`,
  429 \`network_rate_limited\`, a closed connection \`instance_not_connected\`, anything else
  \`network_error\` (502).

The codes are declared once, in \`src/errors.ts\` (\`ERROR_CODES\`); the OpenAPI \`Error\` schema lists
them as an enum. This table is written from the registry by \`npx tsx scripts/errors-doc.ts\`, and
\`src/http/errors.test.ts\` fails when it is out of date.

| code | status | meaning |
|---|---|---|
${rows.join('\n')}

## Adding a code

Add it to \`ERROR_CODES\` (with its status and meaning) and a factory to \`errors\` in
\`src/errors.ts\`, throw \`errors.yourFactory(...)\` where it happens, and run the script above.
\`new AppError(\` outside \`src/errors.ts\` fails ESLint.
`;

fs.writeFileSync(path.join(import.meta.dirname, '../docs/errors.md'), page);
