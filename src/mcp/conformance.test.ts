/**
 * The official MCP conformance runner (@modelcontextprotocol/conformance, its server scenarios)
 * against /mcp of a real gateway. The runner sends no credentials, so it talks to a loopback proxy
 * that adds `Authorization: Bearer <instance token>` and passes everything else through untouched
 * (Host included, so the DNS-rebinding scenario still reaches the gateway's own check). Scenarios
 * that call the fixture tools, resources and prompts of the SDK's reference server, or features
 * Waygate does not declare, are left out: docs/mcp.md lists them and why.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectedInstance, startGateway, uniqueNumber, type TestGateway } from '../../test/support/gateway.js';

/** The server scenarios that apply to a server with its own tools (docs/mcp.md, "Conformance"). */
const APPLICABLE_SCENARIOS = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'prompts-list',
  'server-sse-multiple-streams',
  'server-sse-polling',
  'dns-rebinding-protection',
];

const RUNNER = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';
/** The runner's bundle needs Node 22's fs.globSync at load time (see the hook). */
const NODE20_HOOK = 'test/support/conformance/node20.mjs';

interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
  errorMessage?: string;
}

let gw: TestGateway;
let proxy: http.Server;
let proxyUrl: string;
let resultsDir: string;

/** Forwards every request to the gateway with the key added (SSE answers stream through). */
function keyAddingProxy(target: URL, key: string): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: request.url,
        method: request.method,
        headers: { ...request.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    response.on('close', () => upstream.destroy());
    request.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Runs one scenario in a child process (the gateway runs in this one) and reads its checks. */
function runScenario(scenario: string): Promise<{ checks: Check[]; output: string }> {
  const outputDir = path.join(resultsDir, scenario);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', `./${NODE20_HOOK}`, RUNNER, 'server', '--url', proxyUrl, '--scenario', scenario, '-o', outputDir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', () => {
      const files = fs.existsSync(outputDir) ? fs.readdirSync(outputDir, { recursive: true, encoding: 'utf8' }) : [];
      const file = files.find((name) => name.endsWith('checks.json'));
      if (!file) return reject(new Error(`${scenario}: the runner wrote no checks.json\n${output}`));
      resolve({ checks: JSON.parse(fs.readFileSync(path.join(outputDir, file), 'utf8')) as Check[], output });
    });
  });
}

beforeAll(async () => {
  gw = await startGateway();
  const instance = await connectedInstance(gw, uniqueNumber());
  proxy = await keyAddingProxy(new URL(gw.url), instance.token);
  proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}/mcp`;
  resultsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-mcp-conformance-'));
});

afterAll(async () => {
  proxy?.closeAllConnections();
  proxy?.close();
  await gw?.stop();
  if (resultsDir) fs.rmSync(resultsDir, { recursive: true, force: true });
});

describe('MCP conformance (server scenarios of @modelcontextprotocol/conformance)', () => {
  it.each(APPLICABLE_SCENARIOS)('%s passes', async (scenario) => {
    const { checks, output } = await runScenario(scenario);
    const failed = checks.filter((check) => check.status === 'FAILURE');
    expect(failed, `${scenario}:\n${output}`).toEqual([]);
    expect(checks.some((check) => check.status === 'SUCCESS' || check.status === 'INFO')).toBe(true);
  });
});
