/**
 * A WHERE clause built from optional conditions, and the parameters of the statement it is in. The
 * first condition is written out (`workspace_id = $1`), so that a reader of the SQL sees the scope;
 * each `?` of a condition added later takes the next value, numbered after the parameters before it.
 */
export class Where {
  /** The statement's parameters: those of the first condition (and any before it), then those added. */
  readonly params: unknown[];
  private readonly conditions: string[];

  constructor(first: string, params: unknown[]) {
    this.conditions = [first];
    this.params = params;
  }

  and(condition: string, ...values: unknown[]): this {
    let next = 0;
    this.conditions.push(condition.replace(/\?/g, () => this.param(values[next++])));
    if (next !== values.length) throw new Error(`${values.length} values for ${next} placeholders`);
    return this;
  }

  /** The placeholder of one more parameter of the statement (a LIMIT after the clause, say). */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  toString(): string {
    return this.conditions.join(' AND ');
  }
}

/** `%text%` for LIKE with `\` as its escape: the filter's own `%`, `_` and `\` are literal. */
export const containing = (value: string) => `%${value.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;

/**
 * A case-insensitive LIKE of `column` (its pattern a `?`, escaped with `\`). SQLite's LIKE ignores case
 * (ASCII letters only); PostgreSQL's ILIKE ignores case of every letter.
 */
export const likeOf = (dialect: 'sqlite' | 'postgres', column: string) =>
  `${column} ${dialect === 'postgres' ? 'ILIKE' : 'LIKE'} ? ESCAPE '\\'`;

/**
 * Text as JSON writes it inside a string (`"` as `\"`, `\` as `\\`): how a value is looked for in
 * arguments stored as JSON.
 */
export const asInJson = (value: string) => JSON.stringify(value).slice(1, -1);
