/** What the app shows of a workspace's MCP servers; changes to them go through apply-config. */
import { findMcpServerBySlug, listMcpServers } from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';

export const mcpServersOf = (ctx: ServiceContext, workspaceId: string) => listMcpServers(ctx.db, workspaceId);

export const mcpServerOf = (ctx: ServiceContext, workspaceId: string, slug: string) =>
  findMcpServerBySlug(ctx.db, workspaceId, slug);

/** What testing the connection to an upstream found: the tools it lists, or why it failed. */
export type McpConnectionTest = { ok: true; tools: string[] } | { ok: false; message: string };
