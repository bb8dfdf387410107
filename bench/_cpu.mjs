// CPU time of the gateway per send (utime+stime of the child during a fixed number of requests): less sensitive to machine load than req/s.
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ADMIN, connectedSandbox, startGateway, ROOT } from '/work/wt/perf/bench/lib.mjs';
const cpu = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10; }; // ms (100 Hz)
const gw = await startGateway({}, { profile: process.env.PROF });
const inst = await connectedSandbox(gw.url);
const run = (n) => new Promise((res) => { const c = spawn(process.execPath, [path.join(ROOT, 'node_modules/autocannon/autocannon.js'), '-c', '64', '-a', String(n), '-m', 'POST', '-H', `apikey=${inst.token}`, '-H', 'content-type=application/json', '-b', JSON.stringify({ number: '5511900000000', text: 'benchmark message' }), gw.url + '/api/v1/send/text'], { stdio: 'ignore' }); c.once('exit', res); });
await run(5000);
const out = [];
for (let i = 0; i < 3; i++) { const before = cpu(gw.child.pid); await run(20000); out.push(((cpu(gw.child.pid) - before) * 1000 / 20000).toFixed(1)); }
console.log('gateway CPU µs per send:', out.join(' '));
await gw.stop();
