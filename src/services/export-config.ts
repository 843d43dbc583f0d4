/** `approvals export`: the workspace read back in the format `apply` takes, without secrets. */
import type { RuleDefinition } from '../domain/rules.ts';
import type { Sql } from '../store/db.ts';
import { DEFAULT_CALL_TIMEOUT_SECONDS } from '../domain/mcp-servers.ts';
import { DEFAULT_DIGEST_MINUTES, findDigestMinutes } from '../store/digests.ts';
import { listMcpServers } from '../store/mcp-servers.ts';
import { listMembers } from '../store/members.ts';
import { findRequirePasskey } from '../store/passkeys.ts';
import { findRuleSet, listGroups } from '../store/rule-sets.ts';
import { listTools } from '../store/tools.ts';
import { findWebhookEndpoint } from '../store/webhooks.ts';
import { findWorkspace, type Workspace } from '../store/workspaces.ts';
import type { WorkspaceConfig } from './config-file.ts';
import type { ServiceContext } from './context.ts';
import { exportSignIn } from './oidc-config.ts';

/** The workspace in the format `apply` takes: applying the export changes nothing. */
export const exportConfig = (ctx: ServiceContext, workspace: Workspace) => exportFrom(ctx.db, workspace);

/** The same, read inside a transaction (`sql`). */
export async function exportFrom(sql: Sql, workspace: Workspace): Promise<WorkspaceConfig> {
  const current = (await findWorkspace(sql, workspace.id)) ?? workspace;
  const members = await listMembers(sql, workspace.id);
  const emailOf = new Map(members.map((m) => [m.id, m.email]));
  const groups = await listGroups(sql, workspace.id);
  const tools = (await listTools(sql, workspace.id)).filter((tool) => tool.classification !== 'new');
  const { rules } = await findRuleSet(sql, workspace.id);
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
    ...(m.teamsUserId ? { teams_user_id: m.teamsUserId } : {}),
    channels: m.channels,
    ...(m.timeZone ? { time_zone: m.timeZone } : {}),
    ...(m.quietHours ? { quiet_hours: m.quietHours } : {}),
    ...(m.digestMinutes !== null ? { digest_minutes: m.digestMinutes } : {}),
    ...(m.agents.length > 0 ? { agents: m.agents } : {}),
    ...(m.delegation && emailOf.has(m.delegation.delegateId)
      ? {
          delegate: {
            to: emailOf.get(m.delegation.delegateId)!,
            from: new Date(m.delegation.from).toISOString(),
            until: new Date(m.delegation.until).toISOString(),
          },
        }
      : {}),
  }));
  config.groups = Object.fromEntries(
    [...groups].map(([name, ids]) => [name, ids.map((id) => emailOf.get(id)!)]),
  );
  config.tools = tools.map((tool) => ({
    connection: tool.connection,
    tool: tool.name,
    classification: tool.classification as 'allow' | 'approval' | 'deny',
  }));
  const webhook = await findWebhookEndpoint(sql, workspace.id);
  if (webhook) config.webhook = { url: webhook.url };
  if (current.slackChannel) config.slack = { channel: current.slackChannel };
  if (current.teamsChannel) config.teams = { channel: current.teamsChannel };
  if (current.oauthGrantRole !== 'admin') config.oauth = { grant_role: current.oauthGrantRole };
  if (current.keyBinding === 'required') config.keys = { require_bound: true };
  if (await findRequirePasskey(sql, workspace.id)) config.approvals = { require_passkey: true };
  const signIn = await exportSignIn(sql, workspace.id);
  if (signIn) config.sign_in = signIn;
  const digestMinutes = await findDigestMinutes(sql, workspace.id);
  if (digestMinutes !== DEFAULT_DIGEST_MINUTES) config.notifications = { digest_minutes: digestMinutes };
  if (current.remind) config.remind = JSON.parse(current.remind) as WorkspaceConfig['remind'];
  config.rules = rules as RuleDefinition[];
  // The default call timeout is left out, as a file that leaves it out means it.
  config.mcp_servers = (await listMcpServers(sql, workspace.id)).map(
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
