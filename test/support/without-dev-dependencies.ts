/**
 * Loaded with `node --import` in place of `npm ci --omit=dev`: resolving a package that only
 * devDependencies bring fails as it would in an install without them, so a test shows the command
 * runs on the runtime dependencies alone (without reinstalling node_modules).
 */
import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const devOnly = new Set(Object.keys(manifest.devDependencies).filter((name) => !manifest.dependencies[name]));

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (devOnly.has(packageOf(specifier)))
      throw Object.assign(new Error(`Cannot find package '${specifier}' (a devDependency, not installed)`), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    return nextResolve(specifier, context);
  },
});
