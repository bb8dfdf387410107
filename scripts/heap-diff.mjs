#!/usr/bin/env node
// Compares two V8 heap snapshots (.heapsnapshot, as `npm run soak` writes with SOAK_HEAP_SNAPSHOTS):
// objects counted and their self sizes summed by kind and constructor name in each, the groups that
// grew most, and for the top growers the retainer paths (walked from sampled objects of the second
// snapshot towards the roots) that hold most of them.
//   node --max-old-space-size=8192 scripts/heap-diff.mjs <first.heapsnapshot> <second.heapsnapshot> [top]
// Self sizes, not retained sizes: a Map that grows shows as its backing (array) and the entries'
// objects; the retainer paths say who holds them.
import fs from 'node:fs';

const [firstFile, secondFile, topArg] = process.argv.slice(2);
if (!firstFile || !secondFile) {
  console.error('usage: heap-diff.mjs <first.heapsnapshot> <second.heapsnapshot> [top]');
  process.exit(2);
}
const TOP = Number(topArg ?? 25);
/** Constructors that only carry data: a holder is the nearest object up the chain that is none of these. */
const PLAIN = new Set(['Object', 'Array', 'Map', 'Set', 'system / Context', 'Timeout', 'WeakRef', '']);

function load(file) {
  const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  const meta = raw.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const f = (name) => meta.node_fields.indexOf(name);
  const e = (name) => meta.edge_fields.indexOf(name);
  return {
    nodes: raw.nodes,
    edges: raw.edges,
    strings: raw.strings,
    nf,
    ef,
    nodeTypes,
    edgeTypes,
    TYPE: f('type'),
    NAME: f('name'),
    SELF: f('self_size'),
    EDGES: f('edge_count'),
    ETYPE: e('type'),
    ENAME: e('name_or_index'),
    ETO: e('to_node'),
  };
}

/** A group key: kind and, for objects and closures, the constructor or function name. */
function keyOf(s, i) {
  const type = s.nodeTypes[s.nodes[i + s.TYPE]];
  const name = s.strings[s.nodes[i + s.NAME]];
  if (type === 'object' || type === 'closure' || type === 'native') return `${type} ${name}`;
  if (type === 'hidden' || type === 'synthetic') return `${type} ${name.slice(0, 60)}`;
  return `(${type})`;
}

function groups(s) {
  const out = new Map();
  let total = 0;
  for (let i = 0; i < s.nodes.length; i += s.nf) {
    const key = keyOf(s, i);
    const g = out.get(key) ?? { count: 0, size: 0 };
    g.count += 1;
    g.size += s.nodes[i + s.SELF];
    total += s.nodes[i + s.SELF];
    out.set(key, g);
  }
  return { out, total };
}

const mb = (b) => (b / 1_048_576).toFixed(1);

const first = load(firstFile);
const a = groups(first);
const heldA = holders(first, retainers(first));
first.nodes = first.edges = first.strings = null;
const second = load(secondFile);
const b = groups(second);
const s = second;
const r2 = retainers(second);
const { nodeCount } = r2;
const detail = process.env.HOLDER ? { holder: process.env.HOLDER, groups: new Map() } : undefined;
const heldB = holders(second, r2, detail);

console.log(`live heap (sum of self sizes): ${mb(a.total)} MB -> ${mb(b.total)} MB (${mb(b.total - a.total)} MB)`);
const rows = [...new Set([...a.out.keys(), ...b.out.keys()])].map((key) => {
  const x = a.out.get(key) ?? { count: 0, size: 0 };
  const y = b.out.get(key) ?? { count: 0, size: 0 };
  return { key, count: y.count - x.count, size: y.size - x.size, countA: x.count, countB: y.count, sizeB: y.size };
});
rows.sort((p, q) => q.size - p.size);
console.log(`\ntop ${TOP} growers by self size (second - first):`);
console.log('  +MB      +count     count now  group');
for (const r of rows.slice(0, TOP)) {
  console.log(`  ${mb(r.size).padStart(7)}  ${String(r.count).padStart(9)}  ${String(r.countB).padStart(10)}  ${r.key}`);
}

/** For each node of a snapshot, its first strong retainer and the edge from it. */
function retainers(s) {
  const nodeCount = s.nodes.length / s.nf;
  const firstEdge = new Uint32Array(nodeCount + 1);
  for (let n = 0, edge = 0; n < nodeCount; n += 1) {
    firstEdge[n] = edge;
    edge += s.nodes[n * s.nf + s.EDGES] * s.ef;
  }
  firstEdge[nodeCount] = s.edges.length;
  const retainer = new Int32Array(nodeCount).fill(-1);
  const retainerEdge = new Int32Array(nodeCount).fill(-1);
  for (let n = 0; n < nodeCount; n += 1) {
    for (let edge = firstEdge[n]; edge < firstEdge[n + 1]; edge += s.ef) {
      const type = s.edgeTypes[s.edges[edge + s.ETYPE]];
      if (type === 'weak' || type === 'shortcut') continue;
      const to = s.edges[edge + s.ETO] / s.nf;
      if (retainer[to] === -1 && to !== n) {
        retainer[to] = n;
        retainerEdge[to] = edge;
      }
    }
  }
  return { nodeCount, retainer, retainerEdge };
}

/**
 * Self sizes summed by holder: the nearest object up the retainer chain (12 levels) whose constructor
 * is one of ours or a library's (not a plain Object/Array/Map/Set), named with the edge it holds it by.
 */
function holders(s, r, detail) {
  const out = new Map();
  for (let n = 0; n < r.nodeCount; n += 1) {
    let holder = '(none within 12 levels)';
    let via = '';
    for (let cur = n, d = 0; d < 12 && r.retainer[cur] !== -1; d += 1) {
      const edge = r.retainerEdge[cur];
      const type = s.edgeTypes[s.edges[edge + s.ETYPE]];
      if (type === 'property') via = String(s.strings[s.edges[edge + s.ENAME]]).slice(0, 40);
      cur = r.retainer[cur];
      const i = cur * s.nf;
      const nodeType = s.nodeTypes[s.nodes[i + s.TYPE]];
      const name = s.strings[s.nodes[i + s.NAME]];
      if ((nodeType === 'object' || nodeType === 'closure') && !PLAIN.has(name)) {
        holder = `${nodeType === 'closure' ? 'closure ' : ''}${name}.${via}`;
        break;
      }
      if (nodeType === 'synthetic') {
        holder = `${name}`;
        break;
      }
    }
    out.set(holder, (out.get(holder) ?? 0) + s.nodes[n * s.nf + s.SELF]);
    if (detail && holder === detail.holder) {
      const key = `${keyOf(s, n * s.nf)}  ${pathOf(s, r, n, 3)}`;
      detail.groups.set(key, (detail.groups.get(key) ?? 0) + s.nodes[n * s.nf + s.SELF]);
    }
  }
  return out;
}

function edgeLabel(s, edge) {
  const type = s.edgeTypes[s.edges[edge + s.ETYPE]];
  const nameOrIndex = s.edges[edge + s.ENAME];
  if (type === 'element' || type === 'hidden') return `[${nameOrIndex}]`;
  return `.${String(s.strings[nameOrIndex]).slice(0, 40)}`;
}

/** The path from a node up towards the roots, as "Constructor.edge <- ..." (indexes dropped so paths group). */
function pathOf(s, r, n, depth) {
  const parts = [];
  for (let cur = n, d = 0; d < depth && r.retainer[cur] !== -1; d += 1) {
    const label = edgeLabel(s, r.retainerEdge[cur]).replace(/^\[\d+\]$|^\.\d+$/, '[i]');
    cur = r.retainer[cur];
    parts.push(`${keyOf(s, cur * s.nf)}${label}`);
  }
  return parts.join(' <- ');
}

console.log('\ntop holders by growth (self sizes of everything under the nearest non-plain object, second - first):');
console.log('  +MB      MB now  holder.property');
const held = [...new Set([...heldA.keys(), ...heldB.keys()])].map((k) => ({
  k,
  grew: (heldB.get(k) ?? 0) - (heldA.get(k) ?? 0),
  now: heldB.get(k) ?? 0,
}));
held.sort((x, y) => y.grew - x.grew);
for (const h of held.slice(0, TOP)) console.log(`  ${mb(h.grew).padStart(7)}  ${mb(h.now).padStart(7)}  ${h.k}`);
// A holder can gain only because the first retainer of the same objects changed; its loss shows here.
console.log('  … and the holders that lost most:');
for (const h of held.slice(-8).reverse()) console.log(`  ${mb(h.grew).padStart(7)}  ${mb(h.now).padStart(7)}  ${h.k}`);

if (detail) {
  console.log(`\nwhat ${detail.holder} holds in the second snapshot (kind, 3 levels of path):`);
  for (const [k, v] of [...detail.groups].sort((x, y) => y[1] - x[1]).slice(0, TOP)) console.log(`  ${mb(v).padStart(7)}  ${k}`);
}

console.log('\nretainer paths (first strong retainer, 8 levels) of the top growers, 2,000 objects sampled each:');
for (const r of rows.slice(0, Math.min(TOP, 12))) {
  if (r.count <= 0) continue;
  const members = [];
  for (let n = 0; n < nodeCount; n += 1) if (keyOf(s, n * s.nf) === r.key) members.push(n);
  const step = Math.max(1, Math.floor(members.length / 2000));
  const paths = new Map();
  let sampled = 0;
  for (let i = 0; i < members.length; i += step) {
    const p = pathOf(s, r2, members[i], 8);
    paths.set(p, (paths.get(p) ?? 0) + 1);
    sampled += 1;
  }
  console.log(`\n${r.key} (+${r.count}, +${mb(r.size)} MB):`);
  for (const [p, c] of [...paths].sort((x, y) => y[1] - x[1]).slice(0, 3)) {
    console.log(`  ${((100 * c) / sampled).toFixed(0).padStart(3)}%  ${p}`);
  }
}
