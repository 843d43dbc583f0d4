/**
 * RFC 8785 (JSON Canonicalization Scheme): object keys sorted by UTF-16 code units, no whitespace,
 * numbers and strings serialized as ECMAScript's JSON.stringify does. Hashes of evidence entries and
 * idempotency fingerprints are computed over this form, so anyone can recompute them.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON cannot represent a non-finite number');
    return JSON.stringify(value);
  }
  // Plain loops and concatenation: this runs for every evidence entry written and verified.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i > 0 ? ',' : ''}${canonicalJson(value[i] ?? null)}`;
    return `${out}]`;
  }
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    let out = '{';
    // The default sort compares UTF-16 code units, as RFC 8785 requires.
    for (const key of Object.keys(record).sort()) {
      const item = record[key];
      if (item === undefined) continue;
      out += `${out.length > 1 ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(item)}`;
    }
    return `${out}}`;
  }
  throw new TypeError(`canonical JSON cannot represent a ${typeof value}`);
}
