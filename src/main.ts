/** `npm start`: runs the service until SIGTERM or SIGINT, then stops gracefully. */
import { cacheCompiledModules } from './compile-cache.ts';

cacheCompiledModules();
const { loadConfig } = await import('./config.ts');
const { startService } = await import('./runtime.ts');
const { flushTraces } = await import('./telemetry/tracing.ts');

const service = await startService(loadConfig());
const { publicUrl } = service.ctx;
service.app.log.info(
  { url: service.url, publicUrl, storage: service.ctx.db.dialect },
  `listening: the app at ${publicUrl}/app, the docs at ${publicUrl}/docs`,
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    service.app.log.info({ signal }, 'shutting down');
    await service.stop();
    await flushTraces();
    process.exit(0);
  });
}
