#!/usr/bin/env node
// The `approvals` command line (see src/cli/main.ts). Runs on Node.js 24, which strips TypeScript types.
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
