#!/usr/bin/env node
// The `approvals` command line (see src/cli/main.ts). Runs on Node.js 24, which strips TypeScript types.
// On an older Node.js the import below fails with ERR_UNKNOWN_FILE_EXTENSION: say what is wrong instead.
const [major] = process.versions.node.split('.').map(Number);
if (major < 24) {
  process.stderr.write(
    `approvals: needs Node.js 24 or later, and this is ${process.version}. In the checkout, \`npx approvals\` ` +
      'runs it with the Node.js the project brings (after `npm ci`).\n',
  );
  process.exit(2);
}
const { cacheCompiledModules } = await import('../src/compile-cache.ts');
cacheCompiledModules();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
