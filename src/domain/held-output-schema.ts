/**
 * Tools that declare an `outputSchema` (issue 40). A schema-aware client checks every result that is
 * not an error against it: a held answer, which has no such output, would fail that check, and marking
 * it an error makes assistants show a waiting call as a failure. So the proxy lists such a tool with its
 * schema widened to also accept the held answer's structured form, `{ service: <envelope> }`, and sends
 * held answers with that structured content. Pure.
 */

/** The held answer's structured content, as a JSON Schema. */
const HELD_ANSWER = {
  type: 'object',
  properties: {
    service: {
      type: 'object',
      properties: { status: { type: 'string' }, reference: { type: 'string' } },
      required: ['status', 'reference'],
    },
  },
  required: ['service'],
};

/** Keywords that stay at the root: references into them (`#/$defs/…`) must still resolve. */
const ROOT_KEYWORDS = ['$schema', '$id', '$defs', 'definitions'];

/** The tool's output schema widened to accept the held answer too (`type: object` at the root, as MCP asks). */
export function withHeldAnswer(outputSchema: Record<string, unknown>): Record<string, unknown> {
  const root = Object.fromEntries(
    ROOT_KEYWORDS.filter((k) => k in outputSchema).map((k) => [k, outputSchema[k]]),
  );
  const own = Object.fromEntries(Object.entries(outputSchema).filter(([k]) => !ROOT_KEYWORDS.includes(k)));
  return { ...root, type: 'object', anyOf: [own, HELD_ANSWER] };
}

/** A tool as the proxy lists it: with a widened output schema when it declares one. */
export function listedWithHeldAnswer<T extends { outputSchema?: unknown }>(tool: T): T {
  const schema = tool.outputSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return tool;
  return { ...tool, outputSchema: withHeldAnswer(schema as Record<string, unknown>) };
}
