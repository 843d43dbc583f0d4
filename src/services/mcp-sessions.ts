/**
 * 2025-era MCP sessions (`Mcp-Session-Id`), kept in the database so that any instance can serve any
 * request of a session (mcp/endpoint.ts).
 */
import {
  closeMcpSession,
  findMcpSession,
  insertMcpSession,
  setMcpSessionLogLevel,
} from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';

export const startMcpSession = (
  ctx: ServiceContext,
  session: {
    id: string;
    workspaceId: string;
    mcpServerId: string;
    protocolVersion: string;
    clientCapabilities: Record<string, unknown> | null;
  },
) => insertMcpSession(ctx.db, { ...session, createdAt: ctx.now() });

export const mcpSessionOf = (ctx: ServiceContext, id: string) => findMcpSession(ctx.db, id);

export const endMcpSession = (ctx: ServiceContext, id: string) => closeMcpSession(ctx.db, id, ctx.now());

/** The least severe log message the session's client wants (`logging/setLevel`). */
export const setMcpSessionLevel = (ctx: ServiceContext, id: string, level: string) =>
  setMcpSessionLogLevel(ctx.db, id, level);
