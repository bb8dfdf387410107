/**
 * Every package the gateway runs with accepts the Node.js versions package.json promises
 * (`engines.node`, Node 20 LTS included). A dependency's newer release may ask for Node 22: on
 * Node 20 it can then fail at run time in a path the tests never take. Dev tools are left out (the
 * MCP conformance runner's GitHub client asks for Node 22 and is loaded only by its own test).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');

function engineOf(directory: string): { name: string; version: string; node?: string } {
  const manifest = JSON.parse(fs.readFileSync(path.join(directory, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    engines?: { node?: string };
  };
  return { name: manifest.name, version: manifest.version, ...(manifest.engines?.node ? { node: manifest.engines.node } : {}) };
}

describe('runtime dependencies', () => {
  it('all accept the oldest Node.js that package.json promises, and the one running the tests', () => {
    const promised = engineOf(ROOT).node!;
    const oldest = semver.minVersion(promised)!.version;
    // Every installed package the production tree uses, workspaces included.
    const directories = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((line) => line && line !== ROOT);
    expect(directories.length).toBeGreaterThan(100);
    const refusing = directories
      .map(engineOf)
      .filter((pkg) => pkg.node && !(semver.satisfies(oldest, pkg.node) && semver.satisfies(process.version, pkg.node)))
      .map((pkg) => `${pkg.name}@${pkg.version} wants node ${pkg.node}`);
    expect(refusing, `package.json promises node ${promised}`).toEqual([]);
  });
});
