/**
 * Node's cache of compiled modules (type-stripped and compiled once, then read back): a command or a
 * restart starts in about half the time. Kept in the install's node_modules/.cache, not in the shared
 * temporary folder; where that is read-only (the container image), nothing is cached and nothing fails.
 * Entry points call it before they import the rest, dynamically.
 */
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

export function cacheCompiledModules(): void {
  enableCompileCache(fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url)));
}
