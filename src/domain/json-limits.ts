/** Whether a JSON value is an object (not null, not an array). */
export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** How deep arguments and context may nest (decisions.md: deeper values are refused). */
export const MAX_JSON_DEPTH = 32;

/**
 * Nesting depth of a JSON value, counted without recursion so hostile input cannot blow the stack;
 * stops counting once past `limit`.
 */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > limit) return deepest;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}
