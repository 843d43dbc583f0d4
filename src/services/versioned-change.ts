/**
 * A configuration change in versions (optimistic concurrency, migration 022): each item of the
 * configuration is compared before and after a change; the items it changed move to the next version,
 * with their author, and a change over an item changed since it was read is refused.
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { utcText } from '../domain/time-text.ts';
import {
  configVersion,
  itemsChangedSince,
  type ItemChange,
  recordConfigChange,
} from '../store/config-versions.ts';
import type { Sql } from '../store/db.ts';
import { DEFAULT_DIGEST_MINUTES } from '../store/digests.ts';
import { listMcpServers } from '../store/mcp-servers.ts';
import { findWebhookEndpoint } from '../store/webhooks.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { ServiceError } from './errors.ts';
import type { openChain } from './evidence.ts';
import { exportFrom } from './export-config.ts';
import { revokeGrantsNoLongerHeld } from './oauth.ts';
import { sealedSecretOf } from './oidc-config.ts';

/**
 * Runs `apply` between two readings of the configuration's items: the items it changed move to the
 * next version, with their author; with `readAt`, a change to an item changed after it is refused
 * (and so rolled back with the rest of the transaction).
 */
export async function versioned(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  actor: string,
  chain: Awaited<ReturnType<typeof openChain>>,
  apply: () => Promise<{ changes: Record<string, unknown>; webhookSecret?: string }>,
  readAt?: number,
) {
  const before = await itemsOf(tx, workspace);
  const { changes, webhookSecret } = await apply();
  await revokeGrantsNoLongerHeld(tx, ctx, chain, workspace.id);
  const changed = changedItems(before, await itemsOf(tx, workspace));
  let version = await configVersion(tx, workspace.id);
  if (readAt !== undefined && changed.length > 0) {
    const since = new Set(changed);
    const overtaken = (await itemsChangedSince(tx, workspace.id, readAt)).filter(({ item }) =>
      since.has(item),
    );
    if (overtaken.length > 0) throw conflict(overtaken, version);
  }
  if (changed.length > 0) {
    version += 1;
    await recordConfigChange(tx, workspace.id, {
      version,
      items: changed,
      changedBy: actor,
      changedAt: ctx.now(),
    });
  }
  await chain.append('config.applied', { ...changes, changed_by: actor, version, items_changed: changed });
  // The secret is shown this once; it is stored sealed.
  return {
    applied: true as const,
    version,
    items_changed: changed,
    ...(webhookSecret ? { webhook_secret: webhookSecret } : {}),
  };
}

/**
 * Each item of the configuration as text, by a key that names it (`member:ann@acme.test`,
 * `rule:Payments`, …): what a change is compared item by item with. Credentials and the webhook's
 * secret are in it sealed, so giving new ones counts as a change of their item.
 */
async function itemsOf(sql: Sql, workspace: Workspace): Promise<Map<string, string>> {
  const config = await exportFrom(sql, workspace);
  const items = new Map<string, string>();
  const put = (key: string, value: unknown) => items.set(key, canonicalJson(value ?? null));
  put('profile', { name: config.name, branding: config.branding });
  put('slack', config.slack);
  put('teams', config.teams);
  put('oauth', config.oauth ?? { grant_role: 'admin' });
  put('keys', config.keys ?? { require_bound: false });
  put('approvals', config.approvals ?? { require_passkey: false });
  put('remind', config.remind);
  put('sign_in', config.sign_in && { ...config.sign_in, secret: await sealedSecretOf(sql, workspace.id) });
  put('notifications', config.notifications ?? { digest_minutes: DEFAULT_DIGEST_MINUTES });
  const webhook = await findWebhookEndpoint(sql, workspace.id);
  put('webhook', webhook && { url: webhook.url, secret: webhook.secretSealed, disabled: webhook.disabledAt });
  for (const member of config.members ?? []) put(`member:${member.email}`, member);
  for (const [name, emails] of Object.entries(config.groups ?? {})) put(`group:${name}`, emails);
  for (const tool of config.tools ?? []) put(`tool:${tool.connection}/${tool.tool}`, tool.classification);
  for (const rule of config.rules ?? []) put(`rule:${rule.name}`, rule);
  for (const server of await listMcpServers(sql, workspace.id))
    put(`mcp_server:${server.slug}`, {
      name: server.name,
      url: server.url,
      timeout: server.callTimeoutSeconds,
      headers: server.headersSealed,
    });
  return items;
}

function changedItems(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((key) => before.get(key) !== after.get(key)).sort();
}

/** An item key in words, for a refused save. */
function itemText(item: string): string {
  const [kind, ...rest] = item.split(':');
  const name = rest.join(':');
  switch (kind) {
    case 'member':
      return `member ${name}`;
    case 'group':
      return `group “${name}”`;
    case 'rule':
      return `rule “${name}”`;
    case 'tool':
      return `the classification of ${name}`;
    case 'mcp_server':
      return `MCP server ${name}`;
    case 'profile':
      return 'the name and branding';
    default:
      return `the ${kind} settings`;
  }
}

const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A save over a newer version: who changed what since, so the reader knows what to look at. */
export function conflict(changes: ItemChange[], current: number): ServiceError {
  const issues = changes.map((change) => ({
    field: '(change)',
    message: `${capitalized(itemText(change.item))} was changed by ${change.changedBy} at ${utcText(change.changedAt)} (version ${change.version}) — reload to see it.`,
  }));
  return new ServiceError(
    'conflict',
    `the configuration changed since it was read (now version ${current})${issues.length > 0 ? `: ${issues.map((issue) => issue.message).join(' ')}` : ''}`,
    issues,
  );
}
