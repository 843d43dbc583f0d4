/** The call timeout of a registered MCP server (decisions.md, MCP proxy). */

/** `call_timeout_seconds` when the workspace file leaves it out: 15 minutes (decisions.md, MCP). */
export const DEFAULT_CALL_TIMEOUT_SECONDS = 900;
/** The bounds of `call_timeout_seconds`: a second to a day. */
export const MAX_CALL_TIMEOUT_SECONDS = 86_400;
