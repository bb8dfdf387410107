/** Starts Waygate as a process: reads the config, builds the gateway, listens, stops on signals. */
import { ConfigError, loadConfig } from './config.js';
import { createGateway } from './gateway.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Invalid configuration: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
  const gateway = await createGateway(config, {
    // Lost the active-process lease (or could not take over): exit so a supervisor restarts us as a standby.
    onFatal: () => process.exit(1),
  });
  if (gateway.adminKeyGenerated) {
    // Printed once, at the start that generated it; it is kept in DATA_DIR/admin-key.
    console.log(`\nGenerated admin key (also saved in ${config.dataDir}/admin-key):\n  ${gateway.adminKey}\n`);
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
