/**
 * `approvals apply` and `approvals export`: the workspace declared in a file, applied in one
 * transaction with its evidence entry, and read back in the same format (without secrets). The app's
 * admin pages change one item at a time through `editConfig`, in the same transaction as the check
 * that nobody changed that item since the page was read (optimistic concurrency, migration 022).
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { newMemberId, randomId } from '../domain/ids.ts';
import { utcText } from '../domain/time-text.ts';
import type { RuleDefinition } from '../domain/rules.ts';
import { addressesChangedMail } from '../channels/messages.ts';
import {
  listAddressOwners,
  listMembers,
  type MemberAddresses,
  removeMembersExcept,
  upsertMember,
} from '../store/members.ts';
import { findRuleSet, listGroups, replaceGroups, saveRuleSet } from '../store/rule-sets.ts';
import { classifyTool, listTools } from '../store/tools.ts';
import { findRequirePasskey, updateRequirePasskey } from '../store/passkeys.ts';
import {
  configVersion,
  itemsChangedSince,
  type ItemChange,
  recordConfigChange,
} from '../store/config-versions.ts';
import type { Sql } from '../store/db.ts';
import { findWebhookEndpoint } from '../store/webhooks.ts';
import {
  findWorkspace,
  updateWorkspaceProfile,
  updateWorkspaceKeyBinding,
  updateWorkspaceOAuthGrantRole,
  updateWorkspaceRemind,
  updateWorkspaceSlackChannel,
  type Workspace,
} from '../store/workspaces.ts';
import {
  configError,
  crossCheck,
  type ParsedConfig,
  parseConfig,
  type WorkspaceConfig,
} from './config-file.ts';
import { DEFAULT_CALL_TIMEOUT_SECONDS } from '../domain/mcp-servers.ts';
import { listMcpServers, removeMcpServersExcept, upsertMcpServer } from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';
import { checkTarget } from '../net/internal-addresses.ts';
import { type FieldIssue, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { revokeGrantsNoLongerHeld } from './oauth.ts';
import { configureWebhook, emitDelegationEvents } from './webhooks.ts';

export { parseConfig } from './config-file.ts';

/** Who made a change, as the evidence and a refused save name them: a member, or the CLI. */
export const CLI_ACTOR = 'approvals apply (CLI)';

/**
 * Who makes a change: its name in the evidence, and the member it is when a member makes it in the app
 * (an admin page, their own Settings); none for `approvals apply` and the workspace API.
 */
interface Actor {
  name: string;
  memberId?: string;
}

/** A delivery address of a member changed by a change: in its evidence entry, and told to the member. */
interface AddressChange {
  member: string;
  field: (typeof ADDRESS_FIELDS)[number][0];
  from: string | null;
  to: string | null;
}

/** A member's delivery addresses, as the file and the store name them. E-mail is the member's identity. */
const ADDRESS_FIELDS = [
  ['phone', 'phoneOf', 'phone number'],
  ['slack_user_id', 'slackOf', 'Slack user id'],
  ['teams_user_id', 'teamsOf', 'Teams user id'],
] as const;

type DeclaredMember = NonNullable<WorkspaceConfig['members']>[number];
const declared = {
  phoneOf: (m: DeclaredMember) => m.phone ?? null,
  slackOf: (m: DeclaredMember) => m.slack_user_id ?? null,
  // Kept in lower case: the same id in capitals is no change.
  teamsOf: (m: DeclaredMember) => m.teams_user_id?.toLowerCase() ?? null,
};
const storedAddress = {
  phoneOf: (m: MemberAddresses) => m.phone,
  slackOf: (m: MemberAddresses) => m.slackUserId,
  teamsOf: (m: MemberAddresses) => m.teamsUserId,
};

/**
 * The delivery addresses a file changes, and the changes refused (issue 37): a member's phone, Slack and
 * Teams user ids are where their decision links and reply codes go, and the Slack and Teams ids also say
 * who pressed a button. Once the member has acted (`markActed`), only they set them; anyone else (an
 * admin in the app, `approvals apply`, the workspace API) may clear one, which sends nothing anywhere,
 * but not point it elsewhere. A value given as stored is no change, so an exported file applies back.
 * A removed member declared again keeps their row, so they are compared with it too.
 */
async function addressChanges(
  tx: Sql,
  workspaceId: string,
  members: DeclaredMember[],
  actor: Actor,
  lineOf: ParsedConfig['lineOf'],
) {
  const owners = await listAddressOwners(tx, workspaceId);
  const changes: (AddressChange & { memberId: string | null })[] = [];
  const refused: FieldIssue[] = [];
  members.forEach((member, index) => {
    const email = member.email.toLowerCase();
    const owner = owners.get(email);
    for (const [field, key, label] of ADDRESS_FIELDS) {
      const from = owner ? storedAddress[key](owner) : null;
      const to = declared[key](member);
      if (from === to) continue;
      if (owner?.acted && to !== null && owner.id !== actor.memberId) {
        refused.push({
          field: `members.${index}.${field}`,
          message: `${member.name} has used their account, so only ${member.name} can change their ${label}, on their own Settings page (it is where their decision links and codes go); it may only be cleared here`,
          line: lineOf(['members', index, field]),
        });
        continue;
      }
      changes.push({ member: email, field, from, to, memberId: owner?.id ?? null });
    }
  });
  if (refused.length > 0) throw configError(refused);
  return changes;
}

/**
 * Tells each member whose addresses someone else changed, by e-mail to the member's own address (best
 * effort, after the change is stored): an address they did not set shows at once. A member the change
 * adds is not written to (no mail has told them of the workspace yet); their addresses are in the
 * evidence like every other.
 */
async function announceAddressChanges(
  ctx: ServiceContext,
  workspace: Workspace,
  actor: Actor,
  changes: Awaited<ReturnType<typeof addressChanges>>,
) {
  if (!ctx.mailer) return;
  const byMember = new Map<string, typeof changes>();
  for (const change of changes) {
    if (change.memberId === null || change.memberId === actor.memberId) continue;
    byMember.set(change.member, [...(byMember.get(change.member) ?? []), change]);
  }
  for (const [email, own] of byMember) {
    await ctx.mailer
      .send({
        to: email,
        ...addressesChangedMail(
          workspace.name,
          actor.name,
          own.map(({ field, from, to }) => ({
            label: ADDRESS_FIELDS.find(([name]) => name === field)![2],
            from,
            to,
          })),
          `${ctx.publicUrl}/app/settings`,
        ),
      })
      .catch(() => undefined);
  }
}

/** The targets of a file that must not be a way into our own network (checked again at every connect). */
async function checkTargets(ctx: ServiceContext, config: WorkspaceConfig, lineOf: ParsedConfig['lineOf']) {
  const unreachable: FieldIssue[] = [];
  const targets: { url: string; path: (string | number)[] }[] = (config.mcp_servers ?? []).map(
    (server, index) => ({ url: server.url, path: ['mcp_servers', index, 'url'] }),
  );
  if (config.webhook) targets.push({ url: config.webhook.url, path: ['webhook', 'url'] });
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
  const addresses: Awaited<ReturnType<typeof addressChanges>> = [];
  const result = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    if (options.expectVersion !== undefined) {
      const current = await configVersion(tx, workspace.id);
      if (current !== options.expectVersion)
        throw conflict(await itemsChangedSince(tx, workspace.id, options.expectVersion), current);
    }
    return versioned(tx, ctx, workspace, actor.name, chain, () =>
      applyIn(tx, ctx, workspace, { config, lineOf }, actor, addresses),
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
  const addresses: Awaited<ReturnType<typeof addressChanges>> = [];
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
      () => applyIn(tx, ctx, workspace, change, actor, addresses),
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

/**
 * Runs `apply` between two readings of the configuration's items: the items it changed move to the
 * next version, with their author; with `readAt`, a change to an item changed after it is refused
 * (and so rolled back with the rest of the transaction).
 */
async function versioned(
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

/** The file's declarations applied to the stored workspace (inside the caller's transaction). */
async function applyIn(
  tx: Sql,
  ctx: ServiceContext,
  workspace: Workspace,
  { config, lineOf }: ParsedConfig,
  actor: Actor,
  /** Filled with the delivery addresses the change sets: announced once it is stored. */
  addresses: Awaited<ReturnType<typeof addressChanges>>,
) {
  const now = ctx.now();
  let webhookSecret: string | undefined;
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
    // Replaced, not added to: a transaction tried again starts over.
    addresses.splice(
      0,
      addresses.length,
      ...(await addressChanges(tx, workspace.id, config.members, actor, lineOf)),
    );
    const existing = new Map(storedMembers.map((member) => [member.email, member]));
    // Ids first: a delegation may name a member declared further down.
    const idOf = new Map(
      config.members.map((m) => [
        m.email.toLowerCase(),
        existing.get(m.email.toLowerCase())?.id ?? newMemberId(),
      ]),
    );
    const delegations: Record<string, unknown>[] = [];
    for (const member of config.members) {
      const email = member.email.toLowerCase();
      const delegation = member.delegate
        ? {
            delegateId: idOf.get(member.delegate.to.toLowerCase())!,
            from: Date.parse(member.delegate.from),
            until: Date.parse(member.delegate.until),
          }
        : null;
      const before = existing.get(email)?.delegation ?? null;
      if (canonicalJson(before) !== canonicalJson(delegation)) {
        delegations.push({
          member: email,
          delegate: member.delegate ? member.delegate.to.toLowerCase() : null,
          from: delegation && new Date(delegation.from).toISOString(),
          until: delegation && new Date(delegation.until).toISOString(),
        });
      }
      await upsertMember(
        tx,
        {
          id: idOf.get(email)!,
          workspaceId: workspace.id,
          email,
          name: member.name,
          role: member.role,
          phone: member.phone ?? null,
          slackUserId: member.slack_user_id ?? null,
          teamsUserId: member.teams_user_id?.toLowerCase() ?? null,
          channels: member.channels ?? ['email'],
          timeZone: member.time_zone ?? null,
          quietHours: member.quiet_hours ?? null,
          agents: member.agents ?? [],
          delegation,
          createdAt: now,
        },
        now,
      );
    }
    const kept = config.members.map((member) => member.email.toLowerCase());
    const removed = await removeMembersExcept(tx, workspace.id, kept, now);
    changes.members = { declared: kept, removed: removed.map((member) => member.email) };
    // Where each member's decision links and codes go, before and after: every change of one is named.
    if (addresses.length > 0)
      changes.addresses = addresses.map(({ member, field, from, to }) => ({ member, field, from, to }));
    // Who decides in whose place, and when: the evidence names each delegation set, changed or ended.
    if (delegations.length > 0) {
      changes.delegations = delegations;
      await emitDelegationEvents(tx, ctx, workspace.id, delegations);
    }
  }
  if (config.remind !== undefined) {
    await updateWorkspaceRemind(
      tx,
      workspace.id,
      config.remind === null ? null : JSON.stringify(config.remind),
    );
    changes.remind = config.remind;
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
    const existing = new Map((await listMcpServers(tx, workspace.id)).map((server) => [server.slug, server]));
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
  if (config.oauth !== undefined) {
    await updateWorkspaceOAuthGrantRole(tx, workspace.id, config.oauth.grant_role);
    changes.oauth = config.oauth;
  }
  if (config.keys !== undefined) {
    await updateWorkspaceKeyBinding(tx, workspace.id, config.keys.require_bound ? 'required' : 'optional');
    changes.keys = config.keys;
  }
  if (config.approvals !== undefined) {
    await updateRequirePasskey(tx, workspace.id, config.approvals.require_passkey);
    changes.approvals = config.approvals;
  }
  if (config.webhook !== undefined) {
    const made = await configureWebhook(tx, ctx, workspace.id, config.webhook?.url ?? null);
    webhookSecret = made.secret;
    changes.webhook = config.webhook && { url: config.webhook.url, new_secret: made.secret !== undefined };
  }
  return { changes, webhookSecret };
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
  put('oauth', config.oauth ?? { grant_role: 'admin' });
  put('keys', config.keys ?? { require_bound: false });
  put('approvals', config.approvals ?? { require_passkey: false });
  put('remind', config.remind);
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
function conflict(changes: ItemChange[], current: number): ServiceError {
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

/** The configuration's version now: what a form or `apply --expect-version` reads it at. */
export const currentConfigVersion = (ctx: ServiceContext, workspace: Workspace) =>
  configVersion(ctx.db, workspace.id);

/** The workspace in the format `apply` takes: applying the export changes nothing. */
export const exportConfig = (ctx: ServiceContext, workspace: Workspace) => exportFrom(ctx.db, workspace);

async function exportFrom(sql: Sql, workspace: Workspace): Promise<WorkspaceConfig> {
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
  if (current.oauthGrantRole !== 'admin') config.oauth = { grant_role: current.oauthGrantRole };
  if (current.keyBinding === 'required') config.keys = { require_bound: true };
  if (await findRequirePasskey(sql, workspace.id)) config.approvals = { require_passkey: true };
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
