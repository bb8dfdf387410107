/** The gateway's OpenAPI document, built in process (a throwaway SQLite data folder, nothing listens). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../src/config.js';
import { createGateway } from '../src/gateway.js';

export async function buildOpenApiDocument(): Promise<Record<string, any>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-openapi-'));
  try {
    const config = loadConfig({ DATA_DIR: dataDir, GLOBAL_API_KEY: 'openapi-document-key-0123', LOG_LEVEL: 'silent', PORT: '0' });
    const gateway = await createGateway(config, { logger: pino({ level: 'silent' }) });
    try {
      await gateway.app.ready();
      // A deep copy: the generator may walk it freely.
      return JSON.parse(JSON.stringify(gateway.app.swagger())) as Record<string, any>;
    } finally {
      await gateway.close();
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
