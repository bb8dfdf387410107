/**
 * Loads the MCP conformance runner (@modelcontextprotocol/conformance) on Node 20: its bundle imports
 * `globSync` from `fs` (Node 22+) at the top, used only by its `tier-check` command. This hook gives
 * that bundle, and only it, an `fs` that also exports a `globSync` which says so if ever called.
 * Use: node --import ./test/support/conformance/node20.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js ...
 */
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
