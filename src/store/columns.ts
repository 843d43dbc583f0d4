/**
 * A table's column map: each field of a record (camelCase) with its column (snake_case) and how the
 * value is stored, in one place. From it come the SELECT list (`workspace_id AS "workspaceId"`), the
 * parameters of an INSERT or UPDATE, and the decoding of the rows read. Both engines store the same:
 * integers (counts, epoch milliseconds), booleans as 0/1, JSON as text.
 *
 * test/store-scoping.test.ts reads a statement's `${…}` parts down to the literals they come from: a
 * map's are its column names (`workspace_id`), as the column makers below hold no literals of their own.
 */
import type { Row } from './db.ts';

export interface Column<T> {
  readonly name: string;
  decode(value: unknown): T;
  encode(value: T): unknown;
}

const same = (value: unknown) => value;

function column<T>(
  name: string,
  decode: (value: unknown) => T,
  encode: (value: T) => unknown = same,
): Column<T> {
  return { name, decode, encode };
}

/** Text, or one of a union of strings the column's writers keep to. */
export const text = <T extends string = string>(name: string) => column(name, (value) => value as T);

/** An integer: a count, a version, epoch milliseconds. */
export const integer = (name: string) => column(name, Number);

/** A count or a sum: nothing counted (the NULL of a SUM over no rows) is 0. */
export const count = (name: string) => column(name, (value) => Number(value ?? 0));

/** A boolean, stored as 0/1 (PostgreSQL's own booleans, of computed figures, read the same). */
export const boolean = (name: string) =>
  column(
    name,
    (value) => value === true || Number(value) === 1,
    (value: boolean) => Number(value),
  );

/** A JSON value stored as text. */
export const json = <T>(name: string) =>
  column(
    name,
    (value) => JSON.parse(String(value)) as T,
    (value: T) => JSON.stringify(value),
  );

/** The same column, where it may hold null. */
export function nullable<T>(of: Column<T>): Column<T | null> {
  return column(
    of.name,
    (value) => (value === null || value === undefined ? null : of.decode(value)),
    (value: T | null) => (value === null ? null : of.encode(value)),
  );
}

type Fields = Record<string, Column<unknown>>;

/** The record a map's fields decode to. */
export type RecordOf<F extends Fields> = { [K in keyof F]: ReturnType<F[K]['decode']> };

export class Columns<F extends Fields> {
  readonly fields: F;
  private readonly fieldList: [keyof F & string, Column<unknown>][];

  constructor(fields: F) {
    this.fields = fields;
    this.fieldList = Object.entries(fields) as [keyof F & string, Column<unknown>][];
  }

  /** The same map narrowed to some of its fields (a list that reads less than the whole row). */
  pick<K extends keyof F & string>(...keys: K[]): Columns<Pick<F, K>> {
    return new Columns(Object.fromEntries(keys.map((key) => [key, this.fields[key]])) as Pick<F, K>);
  }

  /** The map without some of its fields (those a record is not made of). */
  omit<K extends keyof F & string>(...keys: K[]): Columns<Omit<F, K>> {
    return new Columns(
      Object.fromEntries(this.entries().filter(([key]) => !keys.includes(key as K))) as Omit<F, K>,
    );
  }

  /**
   * The SELECT list, each column under its field's name. `table`: the alias of a join's table; `under`:
   * where a join reads the same names from two tables, this one's are read as `under.field`.
   */
  select(table?: string, under?: string): string {
    const prefix = table ? `${table}.` : '';
    return this.entries()
      .map(([key, { name }]) => {
        const as = under ? `${under}.${key}` : key;
        return as === name ? `${prefix}${name}` : `${prefix}${name} AS "${as}"`;
      })
      .join(', ');
  }

  /** A row read with `select()`, with the same `under`. */
  decode(row: Row, under?: string): RecordOf<F> {
    // A loop over fields listed once: this runs for every row read (100,000 in a chain's verification).
    const record: Record<string, unknown> = {};
    for (const [key, { decode }] of this.fieldList)
      record[key] = decode(row[under ? `${under}.${key}` : key]);
    return record as RecordOf<F>;
  }

  /** Rows read with `select()`. */
  decodeAll(rows: Row[]): RecordOf<F>[] {
    return rows.map((row) => this.decode(row));
  }

  /** For an INSERT of whole records: `INSERT INTO t (${columns}) VALUES ${values}`, then `params`. */
  insert(...records: RecordOf<F>[]) {
    const entries = this.entries();
    let next = 1;
    return {
      columns: entries.map(([, { name }]) => name).join(', '),
      values: records.map(() => `(${entries.map(() => `$${next++}`).join(', ')})`).join(', '),
      params: records.flatMap((record) =>
        entries.map(([key, { encode }]) => (record[key] === undefined ? null : encode(record[key]))),
      ),
    };
  }

  /** For an UPDATE of the fields given: `UPDATE t SET ${set} WHERE …`, its parameters from `firstParam` on. */
  update(record: Partial<RecordOf<F>>, firstParam: number) {
    const present = this.entries().filter(([key]) => record[key] !== undefined);
    return {
      set: present.map(([, { name }], i) => `${name} = $${firstParam + i}`).join(', '),
      params: present.map(([key, { encode }]) => encode(record[key])),
    };
  }

  private entries() {
    return Object.entries(this.fields) as [keyof F & string, Column<unknown>][];
  }
}

export const columns = <F extends Fields>(fields: F) => new Columns(fields);
