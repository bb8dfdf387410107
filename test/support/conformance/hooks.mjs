/** Module resolve hook of node20.mjs: `fs` as imported by the conformance bundle resolves to fs-shim.mjs. */
import fs from 'node:fs';

const shim = new URL('./fs-shim.mjs', import.meta.url).href;
// Node 22 and later have it: nothing to do.
const needed = typeof fs.globSync !== 'function';

export async function resolve(specifier, context, next) {
  const fromRunner = context.parentURL?.includes('/@modelcontextprotocol/conformance/') ?? false;
  if (needed && fromRunner && (specifier === 'fs' || specifier === 'node:fs')) return { url: shim, shortCircuit: true };
  return next(specifier, context);
}
