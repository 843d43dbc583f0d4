/**
 * What an `apply` file declares, applied to the stored workspace inside the caller's transaction: each
 * part it names replaces the stored one, and the evidence entry's `changes` say what it set.
 */
import { randomId } from '../domain/ids.ts';
import { DEFAULT_CALL_TIMEOUT_SECONDS } from '../domain/mcp-servers.ts';
import type { Sql } from '../store/db.ts';
import { updateDigestMinutes } from '../store/digests.ts';
import { listMcpServers, removeMcpServersExcept, upsertMcpServer } from '../store/mcp-servers.ts';
import { listMembers } from '../store/members.ts';
import { updateRequirePasskey } from '../store/passkeys.ts';
import { findRuleSet, listGroups, replaceGroups, saveRuleSet } from '../store/rule-sets.ts';
import { classifyTool } from '../store/tools.ts';
import {
  findWorkspace,
  updateWorkspaceKeyBinding,
  updateWorkspaceOAuthGrantRole,
  updateWorkspaceProfile,
  updateWorkspaceRemind,
  updateWorkspaceSlackChannel,
  updateWorkspaceTeamsChannel,
  type Workspace,
} from '../store/workspaces.ts';
import { type Actor, type AddressChanges, applyMembers } from './apply-members.ts';
import { crossCheck } from './config-cross-check.ts';
import { configError, type ParsedConfig, type WorkspaceConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';
import { applySignIn } from './oidc-config.ts';
import { configureWebhook } from './webhooks.ts';

/** The evidence of a change, part by part (`config.applied`). */
type Changes = Record<string, unknown>;

/** The file's declarations applied to the stored workspace (inside the caller's transaction). */
export async function applyDeclarations(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
  actor: Actor,
  /** Filled with the delivery addresses the change sets: announced once it is stored. */
  addresses: AddressChanges,
) {
  const now = ctx.now();
  const storedMembers = await listMembers(tx, workspace.id);
  const storedGroups = await listGroups(tx, workspace.id);
  const emailOf = new Map(storedMembers.map((m) => [m.id, m.email]));
  const groupsByEmail = new Map(
    [...storedGroups].map(([name, ids]) => [name, ids.map((id) => emailOf.get(id)!)]),
  );
  const storedRules = (await findRuleSet(tx, workspace.id)).rules;
  const issues = crossCheck(
    config,
    { members: storedMembers, groups: groupsByEmail, rules: storedRules },
    lineOf,
  );
  if (issues.length > 0) throw configError(issues);

  const changes: Changes = {};
  if (config.name !== undefined || config.branding !== undefined)
    await applyProfile(tx, workspace, config, changes);
  if (config.members) {
    const given = { storedMembers, actor, lineOf, addresses, changes, now };
    await applyMembers(tx, ctx, workspace, config.members, given);
  }
  if (config.remind !== undefined) {
    await updateWorkspaceRemind(
      tx,
      workspace.id,
      config.remind === null ? null : JSON.stringify(config.remind),
    );
    changes.remind = config.remind;
  }
  if (config.groups) await applyGroups(tx, workspace, config.groups, changes);
  if (config.tools) {
    for (const tool of config.tools) {
      await classifyTool(tx, workspace.id, tool.connection, tool.tool, tool.classification);
    }
    changes.tools = config.tools;
  }
  if (config.rules) {
    await saveRuleSet(tx, workspace.id, config.rules);
    changes.rules = config.rules;
  }
  if (config.mcp_servers) await applyMcpServers(tx, ctx, workspace, config.mcp_servers, changes, now);
  const webhookSecret = await applySettings(tx, ctx, workspace, config, changes);
  return { changes, webhookSecret };
}

async function applyProfile(tx: Sql, workspace: Workspace, config: WorkspaceConfig, changes: Changes) {
  const current = (await findWorkspace(tx, workspace.id)) ?? workspace;
  const profile = {
    name: config.name ?? current.name,
    logoUrl: config.branding ? (config.branding.logo_url ?? null) : current.logoUrl,
    accentColor: config.branding ? (config.branding.accent_color ?? null) : current.accentColor,
  };
  await updateWorkspaceProfile(tx, workspace.id, profile);
  changes.profile = { name: profile.name, logo_url: profile.logoUrl, accent_color: profile.accentColor };
}

async function applyGroups(
  tx: Sql,
  workspace: Workspace,
  declared: NonNullable<WorkspaceConfig['groups']>,
  changes: Changes,
) {
  const idOf = new Map((await listMembers(tx, workspace.id)).map((m) => [m.email, m.id]));
  const groups = new Map(
    Object.entries(declared).map(([name, emails]) => [name, emails.map((e) => idOf.get(e.toLowerCase())!)]),
  );
  await replaceGroups(tx, workspace.id, groups);
  changes.groups = declared;
}

async function applyMcpServers(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  declared: NonNullable<WorkspaceConfig['mcp_servers']>,
  changes: Changes,
  now: number,
) {
  const existing = new Map((await listMcpServers(tx, workspace.id)).map((server) => [server.slug, server]));
  // Stored headers were given for one origin: a server moved to another one leaves them behind.
  const leftBehind = new Set<string>();
  for (const server of declared) {
    // A removed server declared again keeps its id (the upsert's conflict) but not its old credentials.
    const known = existing.get(server.slug);
    const keeps = known && new URL(known.url).origin === new URL(server.url).origin;
    if (known && !keeps && !server.headers) leftBehind.add(server.slug);
    await upsertMcpServer(tx, {
      id: known?.id ?? randomId('mcp_', 12),
      workspaceId: workspace.id,
      slug: server.slug,
      name: server.name,
      url: server.url,
      headersSealed: server.headers
        ? ctx.sealer.seal(JSON.stringify(server.headers))
        : keeps
          ? known.headersSealed
          : ctx.sealer.seal('{}'),
      // Declarative like the rest of the file: left out, it is the default again.
      callTimeoutSeconds: server.call_timeout_seconds ?? DEFAULT_CALL_TIMEOUT_SECONDS,
      createdAt: now,
    });
  }
  const removed = await removeMcpServersExcept(
    tx,
    workspace.id,
    declared.map((server) => server.slug),
    now,
  );
  // Evidence names the headers sent upstream, never their values.
  changes.mcp_servers = {
    declared: declared.map(({ headers, ...server }) => ({
      ...server,
      header_names: headers ? Object.keys(headers) : leftBehind.has(server.slug) ? [] : undefined,
    })),
    removed: removed.map((server) => server.slug),
  };
}

/** The workspace's settings the file names; the webhook's new secret, when it makes one. */
async function applySettings(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  config: WorkspaceConfig,
  changes: Changes,
): Promise<string | undefined> {
  let webhookSecret: string | undefined;
  if (config.slack !== undefined) {
    await updateWorkspaceSlackChannel(tx, workspace.id, config.slack?.channel ?? null);
    changes.slack = config.slack;
  }
  if (config.teams !== undefined) {
    await updateWorkspaceTeamsChannel(tx, workspace.id, config.teams?.channel ?? null);
    changes.teams = config.teams;
  }
  if (config.oauth !== undefined) {
    await updateWorkspaceOAuthGrantRole(tx, workspace.id, config.oauth.grant_role);
    changes.oauth = config.oauth;
  }
  if (config.keys !== undefined) {
    await updateWorkspaceKeyBinding(tx, workspace.id, config.keys.require_bound ? 'required' : 'optional');
    changes.keys = config.keys;
  }
  if (config.notifications !== undefined) {
    await updateDigestMinutes(tx, workspace.id, config.notifications.digest_minutes);
    changes.notifications = config.notifications;
  }
  if (config.approvals !== undefined) {
    await updateRequirePasskey(tx, workspace.id, config.approvals.require_passkey);
    changes.approvals = config.approvals;
  }
  if (config.sign_in !== undefined)
    changes.sign_in = await applySignIn(tx, ctx, workspace.id, config.sign_in);
  if (config.webhook !== undefined) {
    const made = await configureWebhook(tx, ctx, workspace.id, config.webhook?.url ?? null);
    webhookSecret = made.secret;
    changes.webhook = config.webhook && { url: config.webhook.url, new_secret: made.secret !== undefined };
  }
  return webhookSecret;
}
