/** The process log's output: a turn's lines in one write, none lost when the process ends. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TurnBatchedOutput } from './logger.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Runs `body` in a child process with `log` = createLogger('info') on standard output; its lines. */
function childLines(body: string): Promise<{ code: number | null; lines: string[] }> {
  const script = `import { createLogger } from './src/logger.ts'; const log = createLogger('info'); ${body}`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, lines: out.split('\n').filter(Boolean) })));
}

describe('process log output', () => {
  it('writes the lines of one turn in one write, when the turn ends', async () => {
    const writes: string[] = [];
    const output = new TurnBatchedOutput({ write: (text: string) => void writes.push(text) });
    output.write('a\n');
    output.write('b\n');
    output.write('c\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['a\nb\nc\n']);
    output.write('d\n');
    await nextTurn();
    expect(writes).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('writes every line of a process that exits in the turn that logged them', async () => {
    const { code, lines } = await childLines(`for (let i = 0; i < 20000; i++) log.info({ i }, 'line'); process.exit(0);`);
    expect(code).toBe(0);
    expect(lines).toHaveLength(20_000);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ i: 19_999, msg: 'line' });
  });

  it('writes the lines logged before an uncaught error ends the process', async () => {
    const { code, lines } = await childLines(
      `for (let i = 0; i < 5000; i++) log.info({ i }, 'line'); log.fatal('failing'); throw new Error('boom');`,
    );
    expect(code).not.toBe(0);
    expect(lines).toHaveLength(5001);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ level: 60, msg: 'failing' });
  });
});
