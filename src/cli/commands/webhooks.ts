/** `webhook rotate|deliveries|redeliver`: a workspace's webhook secret and its deliveries. */
import { deliveryLog, redeliver, rotateWebhookSecret } from '../../services/webhooks.ts';
import { required, UsageError } from '../usage.ts';
import type { LocalCommand } from './command.ts';
import { workspaceNamed } from './workspace.ts';

export const webhookCommands: Record<string, LocalCommand> = {
  'webhook rotate': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const rotated = await rotateWebhookSecret(ctx, workspace.id);
      return [
        rotated,
        `New signing secret (shown once; the old one keeps signing for 24 hours):\n${rotated.secret}`,
      ];
    },
  },
  'webhook deliveries': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const state = values.state;
      if (state !== undefined && !['pending', 'delivered', 'dead'].includes(state)) {
        throw new UsageError('--state must be pending, delivered or dead');
      }
      const deliveries = await deliveryLog(ctx, workspace.id, { state });
      const lines = deliveries.map(
        (d) =>
          `${d.id} ${d.event} ${d.hold} ${d.state} after ${d.attempts.length} attempt(s)` +
          (d.attempts.length ? `, last ${d.attempts.at(-1)!.status_code ?? d.attempts.at(-1)!.error}` : ''),
      );
      return [{ deliveries }, lines.join('\n') || 'No deliveries.'];
    },
  },
  'webhook redeliver': {
    maxWords: Infinity,
    async run(ctx, words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const ids = words.slice(2);
      if (values['all-dead'] === ids.length > 0)
        throw new UsageError('name event ids or --all-dead (not both)');
      const result = await redeliver(ctx, workspace.id, values['all-dead'] ? 'all-dead' : ids);
      return [result, `Queued ${result.requeued} event(s) for delivery.`];
    },
  },
};
