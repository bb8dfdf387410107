/** Starts Waygate as a process: reads the config, builds the gateway, listens, stops on signals. */
// First: it must change protobufjs before Baileys' WAProto loads (see the module).
import './network/whatsapp/oneof-getter.js';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigError, loadConfig } from './config.js';
import { createGateway } from './gateway.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      // A JSON line like every other one (the config, and so the logger's settings, is what failed).
      pino().fatal({ variable: error.message.split(':')[0] }, `Invalid configuration: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const gateway = await createGateway(config, {
    // Lost the active-process lease (or could not take over): exit so a supervisor restarts us as a standby.
    onFatal: () => process.exit(1),
  });
  if (gateway.adminKeyGenerated) {
    // Said once, at the start that generated it. The key itself stays out of the log (logs travel
    // further than the data folder); the line says where to read it.
    const adminKeyFile = path.join(config.dataDir, 'admin-key');
    gateway.app.log.warn({ adminKeyFile }, `generated an admin key: read it with \`cat ${adminKeyFile}\` (or set GLOBAL_API_KEY)`);
  }
  const url = await gateway.listen();
  gateway.app.log.info({ url, docs: `${url}/docs` }, 'Waygate is listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    gateway.app.log.info({ signal }, 'stopping');
    await gateway.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

void main();
