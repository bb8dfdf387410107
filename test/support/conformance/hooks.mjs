/** Module resolve hook of node20.mjs: `fs` as imported by the conformance bundle resolves to fs-shim.mjs. */
const shim = new URL('./fs-shim.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  const fromRunner = context.parentURL?.includes('/@modelcontextprotocol/conformance/') ?? false;
  if (fromRunner && (specifier === 'fs' || specifier === 'node:fs')) return { url: shim, shortCircuit: true };
  return next(specifier, context);
}
