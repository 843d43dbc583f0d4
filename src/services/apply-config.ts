/**
 * `approvals apply`: the workspace declared in a file (decisions.md, "The file apply takes"),
 * validated as a whole and applied in one transaction with its evidence entry.
 */
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { newMemberId } from '../domain/ids.ts';
import { listMembers, removeMembersExcept, upsertMember } from '../store/members.ts';
import { classifyTool } from '../store/tools.ts';
import { updateWorkspaceProfile, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { type FieldIssue, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';

const toolName = z
  .string()
  .regex(/^[A-Za-z0-9_.:/-]{1,200}$/, 'must be 1-200 characters of A-Z a-z 0-9 _ . : / -');

const configSchema = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  branding: z
    .strictObject({
      logo_url: z
        .url({ protocol: /^https$/, error: 'must be an https URL' })
        .max(2000)
        .nullable()
        .optional(),
      accent_color: z
        .string()
        .regex(/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/, 'must be a hex colour like #0a7')
        .nullable()
        .optional(),
    })
    .optional(),
  members: z
    .array(
      z.strictObject({
        email: z.email('must be an e-mail address').max(254),
        name: z.string().trim().min(1).max(200),
        role: z.enum(['admin', 'approver', 'viewer']),
        phone: z
          .string()
          .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 number like +15550100')
          .nullable()
          .optional(),
        slack_user_id: z
          .string()
          .regex(/^[UW][A-Z0-9]{1,20}$/, 'must be a Slack user id like U01')
          .nullable()
          .optional(),
        channels: z.array(z.enum(['email', 'sms', 'slack'])).optional(),
      }),
    )
    .optional(),
  tools: z
    .array(
      z.strictObject({
        connection: z.string().min(1).max(200),
        tool: toolName,
        classification: z.enum(['allow', 'approval', 'deny']),
      }),
    )
    .optional(),
});

/** Parts of the file this version does not apply yet: refused, never silently ignored. */
const NOT_YET = ['groups', 'rules', 'mcp_servers', 'webhook'];

export type WorkspaceConfig = z.infer<typeof configSchema>;

/** Parses YAML or JSON text into a checked configuration, or throws with every problem found. */
export function parseConfig(text: string): WorkspaceConfig {
  const document = parseDocument(text, { uniqueKeys: true });
  if (document.errors.length > 0) {
    const [first] = document.errors;
    throw new ServiceError(
      'validation_failed',
      `the file is not valid YAML or JSON (line ${first!.linePos?.[0].line})`,
    );
  }
  const value = document.toJS() ?? {};
  const issues: FieldIssue[] = [];
  if (typeof value === 'object' && !Array.isArray(value)) {
    for (const part of NOT_YET) {
      if (part in value) issues.push({ field: part, message: 'is not supported by this version yet' });
    }
  }
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      issues.push({ field: issue.path.join('.') || '(file)', message: issue.message });
  }
  const emails = parsed.data?.members?.map((member) => member.email.toLowerCase()) ?? [];
  emails.forEach((email, index) => {
    if (emails.indexOf(email) !== index)
      issues.push({ field: `members.${index}.email`, message: 'is listed twice' });
  });
  if (issues.length > 0 || !parsed.success) {
    throw new ServiceError(
      'validation_failed',
      issues.map((i) => `${i.field}: ${i.message}`).join('\n'),
      issues,
    );
  }
  return parsed.data;
}

export async function applyConfig(ctx: ServiceContext, workspace: Workspace, config: WorkspaceConfig) {
  const now = ctx.now();
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    const changes: Record<string, unknown> = {};
    if (config.name !== undefined || config.branding !== undefined) {
      const profile = {
        name: config.name ?? workspace.name,
        logoUrl: config.branding ? (config.branding.logo_url ?? null) : workspace.logoUrl,
        accentColor: config.branding ? (config.branding.accent_color ?? null) : workspace.accentColor,
      };
      await updateWorkspaceProfile(tx, workspace.id, profile);
      changes.profile = { name: profile.name, logo_url: profile.logoUrl, accent_color: profile.accentColor };
    }
    if (config.members) {
      const existing = new Map((await listMembers(tx, workspace.id)).map((member) => [member.email, member]));
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
    if (config.tools) {
      for (const tool of config.tools) {
        await classifyTool(tx, workspace.id, tool.connection, tool.tool, tool.classification);
      }
      changes.tools = config.tools;
    }
    await chain.append('config.applied', changes);
  });
  return { applied: true as const };
}
