/**
 * `approvals apply` and `approvals export`: the workspace declared in a file, applied in one
 * transaction with its evidence entry, and read back in the same format (without secrets;
 * export-config.ts). The app's admin pages change one item at a time through `editConfig`, in the same
 * transaction as the check that nobody changed that item since the page was read (optimistic
 * concurrency, migration 022).
 */
import { configVersion, itemsChangedSince } from '../store/config-versions.ts';
import type { Workspace } from '../store/workspaces.ts';
import { checkTarget } from '../net/internal-addresses.ts';
import { applyDeclarations } from './apply-declarations.ts';
import { type Actor, type AddressChanges, announceAddressChanges } from './apply-members.ts';
import { configError, type ParsedConfig, parseConfig, type WorkspaceConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';
import type { FieldIssue } from './errors.ts';
import { openChain } from './evidence.ts';
import { exportConfig, exportFrom } from './export-config.ts';
import { conflict, versioned } from './versioned-change.ts';

export { parseConfig } from './config-file.ts';
export { exportConfig } from './export-config.ts';

/** Who made a change, as the evidence and a refused save name them: a member, or the CLI. */
export const CLI_ACTOR = 'approvals apply (CLI)';

/** The targets of a file that must not be a way into our own network (checked again at every connect). */
async function checkTargets(ctx: ServiceContext, config: WorkspaceConfig, lineOf: ParsedConfig['lineOf']) {
  const unreachable: FieldIssue[] = [];
  const targets: { url: string; path: (string | number)[] }[] = (config.mcp_servers ?? []).map(
    (server, index) => ({ url: server.url, path: ['mcp_servers', index, 'url'] }),
  );
  if (config.webhook) targets.push({ url: config.webhook.url, path: ['webhook', 'url'] });
  if (config.sign_in) targets.push({ url: config.sign_in.oidc.issuer, path: ['sign_in', 'oidc', 'issuer'] });
  for (const { url, path } of targets) {
    await checkTarget(url, ctx.allowPrivateTargets).catch((error: Error) =>
      unreachable.push({ field: path.join('.'), message: error.message, line: lineOf(path) }),
    );
  }
  if (unreachable.length > 0) throw configError(unreachable);
}

/**
 * Applies a whole file: what it declares replaces what is stored. With `expectVersion`, only if the
 * configuration is still at that version (nobody changed anything since it was read).
 */
export async function applyConfig(
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
  options: { actor?: string; expectVersion?: number } = {},
) {
  await checkTargets(ctx, config, lineOf);
  const actor: Actor = { name: options.actor ?? CLI_ACTOR };
  const addresses: AddressChanges = [];
  const result = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    if (options.expectVersion !== undefined) {
      const current = await configVersion(tx, workspace.id);
      if (current !== options.expectVersion)
        throw conflict(await itemsChangedSince(tx, workspace.id, options.expectVersion), current);
    }
    return versioned(tx, ctx, workspace, actor.name, chain, () =>
      applyDeclarations(tx, ctx, workspace, { config, lineOf }, actor, addresses),
    );
  });
  await announceAddressChanges(ctx, workspace, actor, addresses);
  return result;
}

/**
 * One change of the app's admin pages: `edit` makes the partial file from the configuration as it is
 * now, inside the transaction that applies it, so a change made meanwhile to another item is kept.
 * Refused when an item it changes was changed after `readAt`, the version the page was read at.
 */
export async function editConfig(
  ctx: ServiceContext,
  workspace: Workspace,
  {
    actor: name,
    actorMemberId,
    readAt,
    edit,
  }: {
    actor: string;
    /** The member making the change: their own addresses are theirs to change. */
    actorMemberId?: string;
    readAt?: number;
    edit: (current: WorkspaceConfig) => WorkspaceConfig;
  },
) {
  const actor: Actor = { name, memberId: actorMemberId };
  const addresses: AddressChanges = [];
  // Addresses are checked before the lock is taken: the edit as it would apply to what is stored now.
  const checked = new Set<string>();
  const draft = edit(await exportConfig(ctx, workspace));
  await checkTargets(ctx, draft, () => undefined);
  for (const url of targetUrls(draft)) checked.add(url);
  const result = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    const current = await exportFrom(tx, workspace);
    const change = parseConfig(JSON.stringify(edit(current)));
    const stored = new Set(targetUrls(current));
    const unchecked = targetUrls(change.config).filter((url) => !stored.has(url) && !checked.has(url));
    if (unchecked.length > 0) await checkTargets(ctx, change.config, () => undefined);
    return versioned(
      tx,
      ctx,
      workspace,
      actor.name,
      chain,
      () => applyDeclarations(tx, ctx, workspace, change, actor, addresses),
      readAt,
    );
  });
  await announceAddressChanges(ctx, workspace, actor, addresses);
  return result;
}

const targetUrls = (config: WorkspaceConfig) => [
  ...(config.mcp_servers ?? []).map((server) => server.url),
  ...(config.webhook ? [config.webhook.url] : []),
];

/** The configuration's version now: what a form or `apply --expect-version` reads it at. */
export const currentConfigVersion = (ctx: ServiceContext, workspace: Workspace) =>
  configVersion(ctx.db, workspace.id);
