#!/usr/bin/env node
// The `waygate` command (packages/cli/src/main.mjs); `waygate --help` lists the commands.
import { run } from '../src/main.mjs';

process.exit(await run(process.argv.slice(2)));
