/** node:fs plus the `globSync` Node 20 lacks (see node20.mjs); only the runner's tier-check calls it. */
export * from 'node:fs';

export function globSync() {
  throw new Error('fs.globSync needs Node 22: the conformance tier-check command is not available here');
}
