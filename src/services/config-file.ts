/**
 * The file `approvals apply` takes (decisions.md, "The file apply takes"): YAML or JSON, checked as a
 * whole; every problem is reported with its line in the file.
 */
import { isMap, isNode, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import type { z } from 'zod';
import type { RuleDefinition } from '../domain/rules.ts';
import { NON_FINITE_MESSAGE, nonFiniteNumberPath } from '../domain/json-limits.ts';
import { configSchema } from './config-schema.ts';
import { type FieldIssue, ServiceError } from './errors.ts';

export type WorkspaceConfig = z.infer<typeof configSchema> & { rules?: RuleDefinition[] };
export type Path = (string | number)[];

export interface ParsedConfig {
  config: WorkspaceConfig;
  /** The line of the file a path points at (1-based), for error messages. */
  lineOf(path: Path): number | undefined;
}

export function configError(issues: FieldIssue[]): ServiceError {
  const text = issues.map((i) => `${i.line ? `line ${i.line}: ` : ''}${i.field}: ${i.message}`).join('; ');
  return new ServiceError('validation_failed', text, issues);
}

/** Far above any real workspace file, far below what keeps the parser busy for long. */
const MAX_NODES = 50_000;

/**
 * The file's structure checked before it is read: no alias (a workspace file needs none, and they can
 * multiply a small file), no duplicate key in a mapping, not more than MAX_NODES nodes. The duplicate
 * check is ours, one set per mapping: the YAML library's own (`uniqueKeys`) compares every pair of keys,
 * which a file of many keys turns into seconds on the event loop. Messages never repeat the file's keys.
 */
function structureProblem(
  document: ReturnType<typeof parseDocument>,
  lineCounter: LineCounter,
): FieldIssue | null {
  let nodes = 0;
  let problem: FieldIssue | null = null;
  const at = (node: unknown) =>
    isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line : undefined;
  visit(document, {
    Alias(_, node) {
      problem = { field: '(file)', message: 'uses an alias (*name); write the value out', line: at(node) };
      return visit.BREAK;
    },
    Node(_, node) {
      if (++nodes > MAX_NODES) {
        problem = { field: '(file)', message: `is too large (more than ${MAX_NODES} values)` };
        return visit.BREAK;
      }
      if (!isMap(node)) return undefined;
      const keys = new Set<unknown>();
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (keys.has(key)) {
          problem = { field: '(file)', message: 'has a key twice in one mapping', line: at(pair.key) };
          return visit.BREAK;
        }
        keys.add(key);
      }
      return undefined;
    },
  });
  return problem;
}

/**
 * A schema issue in words. Unknown fields are named only when they look like a field name, three at
 * most: a typo is found at once, and an answer never grows with, or repeats, what the file holds.
 */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'unrecognized_keys') return issue.message;
  const named = issue.keys.filter((key) => /^[A-Za-z_][A-Za-z0-9_-]{0,39}$/.test(key)).slice(0, 3);
  const more = issue.keys.length - named.length;
  const names = named.map((key) => `"${key}"`).join(', ');
  return `unknown field${issue.keys.length === 1 ? '' : 's'}: ${names}${more > 0 ? `${named.length ? ' and ' : ''}${more} more` : ''}`;
}

export function parseConfig(text: string): ParsedConfig {
  const lineCounter = new LineCounter();
  let document: ReturnType<typeof parseDocument>;
  try {
    document = parseDocument(text, { uniqueKeys: false, lineCounter });
  } catch {
    // Nesting deeper than the stack: not a workspace file.
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON' }]);
  }
  if (document.errors.length > 0) {
    const [first] = document.errors;
    const line = first!.linePos?.[0].line;
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON', line }]);
  }
  let value: unknown;
  try {
    const problem = structureProblem(document, lineCounter);
    if (problem) throw configError([problem]);
    value = document.toJS() ?? {};
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    // Nesting deeper than the stack: not a workspace file.
    throw configError([{ field: '(file)', message: 'is not valid YAML or JSON' }]);
  }
  const lineOf = (path: Path): number | undefined => {
    for (let length = path.length; length >= 0; length--) {
      const node = document.getIn(path.slice(0, length), true);
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  // YAML's `.inf` and JSON's `1e400` read as Infinity, which no canonical JSON (the evidence) can hold.
  const nonFinite = nonFiniteNumberPath(value);
  if (nonFinite)
    throw configError([
      { field: nonFinite.join('.') || '(file)', message: NON_FINITE_MESSAGE, line: lineOf(nonFinite) },
    ]);
  const issues: FieldIssue[] = [];
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const path = i.path as Path;
      issues.push({ field: path.join('.') || '(file)', message: issueMessage(i), line: lineOf(path) });
    }
  }
  if (issues.length > 0 || !parsed.success) throw configError(issues);
  return { config: parsed.data as WorkspaceConfig, lineOf };
}
