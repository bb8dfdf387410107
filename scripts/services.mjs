// Makes sure the local services the tests talk to are running: starts any that refuses connections
// (commands from ../shared/SERVICES.md) and fails loudly when one cannot be started.
import { execSync } from 'node:child_process';
import net from 'node:net';

export const SERVICES = [
  { name: 'PostgreSQL', port: 5432, start: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start' },
  {
    name: 'Redis',
    port: 6379,
    start:
      'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log',
  },
  { name: 'RabbitMQ', port: 5672, start: 'rabbitmq-server -detached', waitMs: 90_000 },
  { name: 'Mosquitto', port: 1883, start: 'mosquitto -d -c /etc/mosquitto/mosquitto.conf' },
  {
    name: 'NATS',
    port: 4222,
    start:
      'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log',
  },
];

export function portOpen(port, host = '127.0.0.1', timeoutMs = 1000) {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

async function waitForPort(port, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await portOpen(port)) return true;
    await new Promise((r) => setTimeout(r, 500));
  }
  return false;
}

export async function ensureServices(log = console.log) {
  const missing = [];
  for (const service of SERVICES) {
    if (await portOpen(service.port)) continue;
    log(`${service.name} is not answering on ${service.port}; starting it`);
    try {
      execSync(service.start, { stdio: 'inherit', shell: '/bin/bash' });
    } catch (error) {
      log(`starting ${service.name} failed: ${error.message}`);
    }
    if (!(await waitForPort(service.port, service.waitMs ?? 30_000))) missing.push(service.name);
  }
  return missing;
}
