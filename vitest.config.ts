import path from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (a minute or more on a loaded 2-core machine: child gateway processes,
 * a browser), longest first. They start before the rest so that the two workers finish together: a
 * long file started last would run alone at the end with one core idle. Without durations kept from
 * an earlier run (a fresh clone, CI) Vitest orders by file size, which would start a small file of
 * long tests (a chaos half) late.
 */
const LONGEST = ['test/cluster-process.test.ts', 'test/chaos.test.ts', 'test/web.e2e.test.ts', 'test/chaos-environment.test.ts'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = LONGEST.indexOf(path.relative(this.ctx.config.root, file.moduleId).split(path.sep).join('/'));
      return index === -1 ? LONGEST.length : index;
    };
    // Array sort is stable: the others keep Vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

/**
 * Files that test what the gateway changes in Baileys for the whole process (its AsyncLocalStorage,
 * signature checks, key agreement, protobuf getters): each needs Baileys as loaded fresh, before any
 * gateway patched it, so each runs in a module graph of its own.
 */
const FRESH_BAILEYS = [
  'src/network/whatsapp/async-context-tracking.test.ts',
  'src/network/whatsapp/key-agreement.test.ts',
  'src/network/whatsapp/oneof-getter.test.ts',
  'src/network/whatsapp/signatures.test.ts',
];
const ALL = ['src/**/*.test.ts', 'test/**/*.test.ts', 'packages/*/test/**/*.test.ts'];

export default defineConfig({
  test: {
    // The other files share each worker's loaded modules (`isolate: false`): importing the gateway's
    // modules again for every file took 2.5-3.5 s of each, 286-415 s of a run summed over the files
    // (spread over two workers). Every file still builds its own gateways, databases and servers.
    projects: [
      { extends: true, test: { name: 'shared-modules', include: ALL, exclude: FRESH_BAILEYS, isolate: false } },
      { extends: true, test: { name: 'fresh-baileys', include: FRESH_BAILEYS, isolate: true } },
    ],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    globalSetup: ['test/global-setup.ts'],
    reporters: ['default', 'json'],
    outputFile: { json: '.test-data/vitest-report.json' },
  },
});
