/** `npm start`: runs the service until SIGTERM or SIGINT, then stops gracefully. */
import { cacheCompiledModules } from './compile-cache.ts';

cacheCompiledModules();
const { loadConfig } = await import('./config.ts');
const { startService } = await import('./runtime.ts');
const { flushTraces } = await import('./telemetry/tracing.ts');

const service = await startService(loadConfig());
service.app.log.info(
  { url: service.url, publicUrl: service.ctx.publicUrl, storage: service.ctx.db.dialect },
  'listening',
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    service.app.log.info({ signal }, 'shutting down');
    await service.stop();
    await flushTraces();
    process.exit(0);
  });
}
