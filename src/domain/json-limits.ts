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

/**
 * Where the first number in a JSON value that is not finite is (its keys, `['lines', '1', 'price']`),
 * or null. JSON.parse reads `1e400` as Infinity, which JSON itself cannot write back: no hash or store
 * of the value could hold it. Walked without recursion, as `jsonDepth` is.
 */
export function nonFiniteNumberPath(value: unknown): string[] | null {
  const stack: [unknown, string[]][] = [[value, []]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'number' && !Number.isFinite(item)) return path;
    if (item === null || typeof item !== 'object') continue;
    // Reversed onto the stack, so the first such value in the document's order is the one named.
    for (const [key, child] of Object.entries(item).reverse()) stack.push([child, [...path, key]]);
  }
  return null;
}

/** What a submission with a non-finite number is told about that field (never the value). */
export const NON_FINITE_MESSAGE = 'must be a finite number';
