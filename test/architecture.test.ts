/**
 * The map stays true: the import graph of src/ (production files; tests and test fixtures may
 * reach anywhere) has no cycle between folders, and no import points up the layer order below.
 * docs/architecture.md explains the layers.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../src');

/**
 * Lowest first. A folder (or top-level file, without `.ts`) may import its own layer and the
 * layers below. A folder not named here is a feature module (layer `features`).
 */
const LAYERS: { name: string; members: string[] }[] = [
  {
    name: 'foundation',
    members: ['clock', 'config', 'errors', 'logger', 'version', 'admin-key', 'retry', 'topic', 'vocabulary', 'bounded-maps'],
  },
  { name: 'storage', members: ['storage'] },
  { name: 'network', members: ['network'] },
  { name: 'records', members: ['instance-registry', 'media', 'message-store'] },
  { name: 'http', members: ['http'] },
  { name: 'events', members: ['events'] },
  { name: 'sessions', members: ['sessions'] },
  { name: 'cluster', members: ['cluster'] },
  { name: 'shared services', members: ['outgoing'] },
  { name: 'module contract', members: ['modules'] },
  { name: 'features', members: [] },
  { name: 'composition', members: ['gateway', 'main'] },
];
const FEATURES = LAYERS.findIndex((layer) => layer.name === 'features');

function layerOf(unit: string): number {
  const index = LAYERS.findIndex((layer) => layer.members.includes(unit));
  return index === -1 ? FEATURES : index;
}

/** `network/port.ts` -> `network`; `gateway.ts` -> `gateway`. */
function unitOf(file: string): string {
  const [first] = path.relative(SRC, file).split(path.sep);
  return first!.replace(/\.ts$/, '');
}

function productionFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : productionFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** Relative specifiers of `import ... from`, `export ... from` and `import('...')`. */
function importsOf(text: string): string[] {
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+['"]([^'"]+)['"]/gms),
    ...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ];
  return specifiers.map((match) => match[1]!).filter((specifier) => specifier.startsWith('.'));
}

/**
 * Packages loaded when first needed, never by a static import (of the package or any of its paths):
 * the API reference page's module (a 4.4 MB bundle held as a string, ~20 MB of heap;
 * http/docs-page.ts), node-postgres (storage/db.ts `loadPostgresClient`: a SQLite gateway does not
 * load it) and the MCP SDK with zod (mcp/sdk.ts: loaded by the first /mcp request).
 */
const LAZY_PACKAGES = ['@scalar/fastify-api-reference', 'pg', '@modelcontextprotocol/sdk'];
const LAZY_PACKAGE = LAZY_PACKAGES[0]!;

/** Whether `specifier` names a lazy package or a path inside one. */
const isLazy = (specifier: string) => LAZY_PACKAGES.some((name) => specifier === name || specifier.startsWith(`${name}/`));

/** Packages a file loads when it is loaded: `import … from` and bare `import '…'`, not `import type`. */
function staticPackageImportsOf(text: string): string[] {
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+['"]([^'"]+)['"]/gms),
    ...text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
  ];
  return specifiers.map((match) => match[1]!).filter((specifier) => !specifier.startsWith('.'));
}

interface Edge {
  from: string;
  to: string;
  file: string;
  target: string;
}

function folderEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of productionFiles(SRC)) {
    for (const specifier of importsOf(fs.readFileSync(file, 'utf8'))) {
      const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
      const from = unitOf(file);
      const to = unitOf(target);
      if (from !== to) edges.push({ from, to, file: path.relative(SRC, file), target: path.relative(SRC, target) });
    }
  }
  return edges;
}

/** Every cycle between folders, each as its path (a -> b -> a), found by depth-first search. */
function cyclesOf(edges: Edge[]): string[] {
  const next = new Map<string, Set<string>>();
  for (const edge of edges) {
    if (!next.has(edge.from)) next.set(edge.from, new Set());
    next.get(edge.from)!.add(edge.to);
  }
  const cycles = new Set<string>();
  const visit = (unit: string, trail: string[]) => {
    const at = trail.indexOf(unit);
    if (at !== -1) {
      const loop = trail.slice(at);
      // One spelling per cycle: start at its smallest name.
      const start = loop.indexOf([...loop].sort()[0]!);
      const canonical = [...loop.slice(start), ...loop.slice(0, start)];
      cycles.add([...canonical, canonical[0]].join(' -> '));
      return;
    }
    for (const to of next.get(unit) ?? []) visit(to, [...trail, unit]);
  };
  for (const unit of next.keys()) visit(unit, []);
  return [...cycles].sort();
}

describe('architecture', () => {
  const edges = folderEdges();

  it('reads the import graph', () => {
    // Guards the parser: a regression that finds no imports would make the checks below pass vacuously.
    expect(edges.length).toBeGreaterThan(100);
    expect(edges).toContainEqual(expect.objectContaining({ from: 'gateway', to: 'network' }));
  });

  it('has no cycle between folders', () => {
    expect(cyclesOf(edges)).toEqual([]);
  });

  it('has no import pointing up a layer', () => {
    const upward = edges
      .filter((edge) => layerOf(edge.to) > layerOf(edge.from))
      .map((edge) => `${edge.file} (${LAYERS[layerOf(edge.from)]!.name}) imports ${edge.target} (${LAYERS[layerOf(edge.to)]!.name})`);
    expect(upward).toEqual([]);
  });

  it('keeps the drivers free of feature code', () => {
    const network = LAYERS.findIndex((layer) => layer.name === 'network');
    const reached = edges.filter((edge) => edge.from === 'network').map((edge) => edge.to);
    expect(reached.filter((unit) => layerOf(unit) >= network && unit !== 'network')).toEqual([]);
  });

  it('loads the API reference module, node-postgres and the MCP SDK only when they are needed', () => {
    const eager = productionFiles(SRC).flatMap((file) =>
      staticPackageImportsOf(fs.readFileSync(file, 'utf8'))
        .filter(isLazy)
        .map((specifier) => `${path.relative(SRC, file)} imports ${specifier}`),
    );
    expect(eager).toEqual([]);
    expect(staticPackageImportsOf(`import scalar from '${LAZY_PACKAGE}';`)).toEqual([LAZY_PACKAGE]);
    expect(staticPackageImportsOf(`const m = await import('${LAZY_PACKAGE}');\ntype T = typeof import('${LAZY_PACKAGE}');`)).toEqual([]);
    expect(['@modelcontextprotocol/sdk/types.js', 'pg', 'pg-cursor'].map(isLazy)).toEqual([true, true, false]);
  });

  it('finds a cycle and an upward import when there is one', () => {
    const sample: Edge[] = [
      { from: 'chats', to: 'groups', file: 'chats/a.ts', target: 'groups/b.ts' },
      { from: 'groups', to: 'chats', file: 'groups/b.ts', target: 'chats/a.ts' },
    ];
    expect(cyclesOf(sample)).toEqual(['chats -> groups -> chats']);
    expect(layerOf('sessions')).toBeGreaterThan(layerOf('network'));
    expect(layerOf('a-new-feature')).toBe(FEATURES);
  });
});
