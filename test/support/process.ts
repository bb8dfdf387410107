/** Runs the gateway as a real child process (for crash and restart tests). */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { isBuilt } from '../../scripts/build-state.mjs';
import { waitFor } from './gateway.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * A free port for a child process, drawn at random below the kernel's ephemeral range (32768+),
 * which `listen(0)` and outgoing connections use. Ports the kernel hands out come in sequence, so a
 * port a test frees for a moment (a gateway killed and started again on it) could go to another
 * test file's next child; a random draw from 12,000 ports makes that a 1 in 12,000 coincidence.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + randomInt(12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output: string[];
  kill(signal?: NodeJS.Signals): Promise<void>;
}

let entry: string[] | undefined;

/**
 * How a child gateway starts: from the build (dist/main.js) when it is the build of the sources as
 * they are now (the test command builds before the tests; scripts/build-state.mjs), else through tsx
 * from src/main.ts, which takes a second or two more at every start (more on a loaded machine).
 */
function gatewayEntry(): string[] {
  entry ??= isBuilt() ? ['dist/main.js'] : ['--import', 'tsx', 'src/main.ts'];
  return entry;
}

// Starting takes seconds; on a loaded machine (another suite beside it) tens of them. `nodeArgs` go to
// Node before the entry (V8 flags, an `--import` that watches the process from inside).
export async function spawnGateway(
  env: Record<string, string>,
  port: number,
  { listenTimeoutMs = 90_000, nodeArgs = [] }: { listenTimeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<GatewayProcess> {
  const output: string[] = [];
  const child = spawn(process.execPath, [...nodeArgs, ...gatewayEntry()], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`gateway exited: ${output.join('')}`);
        try {
          return (await fetch(`${url}/api/v1/server/ok`)).ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      listenTimeoutMs,
      'gateway process to listen',
    );
  } catch (error) {
    // A process that never listened is nobody's to stop later: it would outlive the test run.
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    throw error;
  }
  return {
    child,
    url,
    output,
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null) child.kill(signal);
      await exited;
    },
  };
}
