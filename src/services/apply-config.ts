/**
 * `approvals apply` and `approvals export`: the workspace declared in a file, applied in one
 * transaction with its evidence entry, and read back in the same format (without secrets).
 */
import { newMemberId, randomId } from '../domain/ids.ts';
import type { RuleDefinition } from '../domain/rules.ts';
import { listMembers, removeMembersExcept, upsertMember } from '../store/members.ts';
import { findRuleSet, listGroups, replaceGroups, saveRuleSet } from '../store/rule-sets.ts';
import { classifyTool, listTools } from '../store/tools.ts';
import { findWebhookEndpoint } from '../store/webhooks.ts';
import {
  findWorkspace,
  updateWorkspaceProfile,
  updateWorkspaceSlackChannel,
  type Workspace,
} from '../store/workspaces.ts';
import { configError, crossCheck, type ParsedConfig, type WorkspaceConfig } from './config-file.ts';
import {
  DEFAULT_CALL_TIMEOUT_SECONDS,
  listMcpServers,
  removeMcpServersExcept,
  upsertMcpServer,
} from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';
import { checkTarget } from './network-targets.ts';
import type { FieldIssue } from './errors.ts';
import { openChain } from './evidence.ts';
import { configureWebhook } from './webhooks.ts';

export { parseConfig } from './config-file.ts';

export async function applyConfig(
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
) {
  const now = ctx.now();
  // Upstreams and webhooks must not be a way into our own network (checked again at every connect).
  const unreachable: FieldIssue[] = [];
  const targets: { url: string; path: (string | number)[] }[] = (config.mcp_servers ?? []).map(
    (server, index) => ({
      url: server.url,
      path: ['mcp_servers', index, 'url'],
    }),
  );
  if (config.webhook) targets.push({ url: config.webhook.url, path: ['webhook', 'url'] });
  for (const { url, path } of targets) {
    await checkTarget(url, ctx.allowPrivateTargets).catch((error: Error) =>
      unreachable.push({ field: path.join('.'), message: error.message, line: lineOf(path) }),
    );
  }
  if (unreachable.length > 0) throw configError(unreachable);
  let webhookSecret: string | undefined;
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
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

    const changes: Record<string, unknown> = {};
    if (config.name !== undefined || config.branding !== undefined) {
      const current = (await findWorkspace(tx, workspace.id)) ?? workspace;
      const profile = {
        name: config.name ?? current.name,
        logoUrl: config.branding ? (config.branding.logo_url ?? null) : current.logoUrl,
        accentColor: config.branding ? (config.branding.accent_color ?? null) : current.accentColor,
      };
      await updateWorkspaceProfile(tx, workspace.id, profile);
      changes.profile = { name: profile.name, logo_url: profile.logoUrl, accent_color: profile.accentColor };
    }
    if (config.members) {
      const existing = new Map(storedMembers.map((member) => [member.email, member]));
      for (const member of config.members) {
        const email = member.email.toLowerCase();
        await upsertMember(tx, {
          id: existing.get(email)?.id ?? newMemberId(),
          workspaceId: workspace.id,
          email,
          name: member.name,
          role: member.role,
          phone: member.phone ?? null,
          slackUserId: member.slack_user_id ?? null,
          channels: member.channels ?? ['email'],
          createdAt: now,
        });
      }
      const kept = config.members.map((member) => member.email.toLowerCase());
      const removed = await removeMembersExcept(tx, workspace.id, kept, now);
      changes.members = { declared: kept, removed: removed.map((member) => member.email) };
    }
    if (config.groups) {
      const idOf = new Map((await listMembers(tx, workspace.id)).map((m) => [m.email, m.id]));
      const groups = new Map(
        Object.entries(config.groups).map(([name, emails]) => [
          name,
          emails.map((e) => idOf.get(e.toLowerCase())!),
        ]),
      );
      await replaceGroups(tx, workspace.id, groups);
      changes.groups = config.groups;
    }
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
    if (config.mcp_servers) {
      const existing = new Map(
        (await listMcpServers(tx, workspace.id)).map((server) => [server.slug, server]),
      );
      // Stored headers were given for one origin: a server moved to another one leaves them behind.
      const leftBehind = new Set<string>();
      for (const server of config.mcp_servers) {
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
        config.mcp_servers.map((server) => server.slug),
        now,
      );
      // Evidence names the headers sent upstream, never their values.
      changes.mcp_servers = {
        declared: config.mcp_servers.map(({ headers, ...server }) => ({
          ...server,
          header_names: headers ? Object.keys(headers) : leftBehind.has(server.slug) ? [] : undefined,
        })),
        removed: removed.map((server) => server.slug),
      };
    }
    if (config.slack !== undefined) {
      await updateWorkspaceSlackChannel(tx, workspace.id, config.slack?.channel ?? null);
      changes.slack = config.slack;
    }
    if (config.webhook !== undefined) {
      const made = await configureWebhook(tx, ctx, workspace.id, config.webhook?.url ?? null);
      webhookSecret = made.secret;
      changes.webhook = config.webhook && { url: config.webhook.url, new_secret: made.secret !== undefined };
    }
    await chain.append('config.applied', changes);
  });
  // The secret is shown this once; it is stored sealed.
  return { applied: true as const, ...(webhookSecret ? { webhook_secret: webhookSecret } : {}) };
}

/** The workspace in the format `apply` takes: applying the export changes nothing. */
export async function exportConfig(ctx: ServiceContext, workspace: Workspace): Promise<WorkspaceConfig> {
  const current = (await findWorkspace(ctx.db, workspace.id)) ?? workspace;
  const members = await listMembers(ctx.db, workspace.id);
  const emailOf = new Map(members.map((m) => [m.id, m.email]));
  const groups = await listGroups(ctx.db, workspace.id);
  const tools = (await listTools(ctx.db, workspace.id)).filter((tool) => tool.classification !== 'new');
  const { rules } = await findRuleSet(ctx.db, workspace.id);
  const config: WorkspaceConfig = { name: current.name };
  if (current.logoUrl || current.accentColor) {
    config.branding = { logo_url: current.logoUrl, accent_color: current.accentColor };
  }
  config.members = members.map((m) => ({
    email: m.email,
    name: m.name,
    role: m.role,
    ...(m.phone ? { phone: m.phone } : {}),
    ...(m.slackUserId ? { slack_user_id: m.slackUserId } : {}),
    channels: m.channels,
  }));
  config.groups = Object.fromEntries(
    [...groups].map(([name, ids]) => [name, ids.map((id) => emailOf.get(id)!)]),
  );
  config.tools = tools.map((tool) => ({
    connection: tool.connection,
    tool: tool.name,
    classification: tool.classification as 'allow' | 'approval' | 'deny',
  }));
  const webhook = await findWebhookEndpoint(ctx.db, workspace.id);
  if (webhook) config.webhook = { url: webhook.url };
  if (current.slackChannel) config.slack = { channel: current.slackChannel };
  config.rules = rules as RuleDefinition[];
  // The default call timeout is left out, as a file that leaves it out means it.
  config.mcp_servers = (await listMcpServers(ctx.db, workspace.id)).map(
    ({ slug, name, url, callTimeoutSeconds }) => ({
      slug,
      name,
      url,
      ...(callTimeoutSeconds === DEFAULT_CALL_TIMEOUT_SECONDS
        ? {}
        : { call_timeout_seconds: callTimeoutSeconds }),
    }),
  );
  return config;
}
