/**
 * The services' refusals of a tools/call in JSON-RPC, in one place: the codes and texts an MCP client
 * gets (docs/mcp.md). A call that ran and failed is answered with the error its execution recorded.
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Refusal } from '../services/proxy-call.ts';

/** A rule's denial (decisions.md, MCP proxy). */
const DENIED_CODE = -32003;
/** Invalid params: also what the MCP SDK's servers answer for a tool they do not have. */
const INVALID_PARAMS = -32602;
/** The server's own errors (JSON-RPC's implementation-defined range). */
const SERVER_ERROR = -32000;

export function refusalError(refusal: Refusal): ProtocolError {
  switch (refusal.kind) {
    case 'denied':
      return new ProtocolError(DENIED_CODE, 'Denied by policy', { service: refusal.envelope });
    case 'invalid_arguments':
      return new ProtocolError(INVALID_PARAMS, refusal.problem);
    // Not the SDK's text, which repeats the name: no error echoes a value of the request.
    case 'unknown_tool':
      return new ProtocolError(
        INVALID_PARAMS,
        'Tool not found: the upstream MCP server lists no tool of this name',
      );
    case 'agent_not_bound':
      return new ProtocolError(
        INVALID_PARAMS,
        'Invalid params: X-Service-Agent must be the agent identity this API key is bound to, or left out',
      );
    case 'quota_reached':
      return new ProtocolError(SERVER_ERROR, 'Monthly hold limit reached');
    case 'key_not_bound':
      return new ProtocolError(
        SERVER_ERROR,
        'Forbidden: this workspace takes calls from bound API keys only',
      );
    case 'call_failed': {
      // An unanswered call says in `data` that it may or may not have run.
      const { code, message, outcome } = refusal.failure;
      return new ProtocolError(code, message, outcome && { outcome });
    }
  }
}
