/** `npm start`: runs the service until SIGTERM or SIGINT, then stops gracefully. */
import { loadConfig } from './config.ts';
import { startService } from './runtime.ts';

const service = await startService(loadConfig());
service.app.log.info(
  { url: service.url, publicUrl: service.ctx.publicUrl, storage: service.ctx.db.dialect },
  'listening',
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    service.app.log.info({ signal }, 'shutting down');
    await service.stop();
    process.exit(0);
  });
}
