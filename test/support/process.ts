/** Runs the gateway as a real child process (for crash and restart tests). */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { waitFor } from './gateway.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output: string[];
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export async function spawnGateway(env: Record<string, string>, port: number, listenTimeoutMs = 30_000): Promise<GatewayProcess> {
  const output: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
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
