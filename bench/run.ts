/**
 * `npm run bench [-- name…]`: runs every benchmark (or the ones named), prints a table, and writes
 * bench/results.json with the machine it ran on and the table in docs/performance.md. Figures are
 * read as ratios to a floor measured in the same run, never as absolute times.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { format as prettier, resolveConfig } from 'prettier';
import { type Figure, figureProblems } from './lib.ts';

interface Results {
  machine: Record<string, unknown>;
  /** When each benchmark last ran. */
  ran: Record<string, string>;
  /** The machine each benchmark last ran on (a run of some keeps the others' figures and machines). */
  machines: Record<string, string>;
  figures: Figure[];
  skipped: { bench: string; figure: string; reason: string }[];
}

interface Outcome {
  figures: Figure[];
  skipped: { figure: string; reason: string }[];
}

const BENCHMARKS: Record<string, () => Promise<Outcome>> = {
  rules: async () => (await import('./rules.ts')).run(),
  mcp: async () => (await import('./mcp.ts')).run(),
  webhooks: async () => (await import('./webhooks.ts')).run(),
  reports: async () => (await import('./reports.ts')).run(),
  holds: async () => (await import('./holds.ts')).run(),
  longpoll: async () => (await import('./longpoll.ts')).run(),
  chain: async () => (await import('./chain.ts')).run(),
  inbox: async () => (await import('./inbox.ts')).run(),
  telemetry: async () => (await import('./telemetry.ts')).run(),
};

function format(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

function table(figures: Figure[]): string {
  const rows = [
    ['name', 'figure', 'value', 'unit', 'floor', 'ratio'],
    ...figures.map((f) => [
      f.bench,
      f.figure,
      format(f.value),
      f.unit,
      f.floor ? `${f.floor.figure} (${format(f.floor.value)} ${f.floor.unit})` : '',
      f.ratio === undefined ? '' : format(f.ratio),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const numeric = new Set([2, 5]);
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        numeric.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join('  ')
      .trimEnd();
  return [
    line(rows[0]!),
    widths.map((width) => '-'.repeat(width)).join('  '),
    ...rows.slice(1).map(line),
  ].join('\n');
}

/**
 * A figure that is not a positive, finite number (nor its floor, nor its ratio: see `figureProblems`)
 * fails the run loudly, by name, and nothing is written: results.json and the table only ever hold
 * figures that can be true. True when the run is refused.
 */
function refused(figures: Figure[]): boolean {
  const bad = figures.flatMap((figure) => {
    const problems = figureProblems(figure);
    return problems.length > 0 ? [`  ${figure.bench} / ${figure.figure}: ${problems.join('; ')}`] : [];
  });
  if (bad.length === 0) return false;
  console.error(`\n${bad.length} figure(s) not a positive, finite number:\n${bad.join('\n')}`);
  console.error('nothing written: bench/results.json and docs/performance.md are as they were');
  process.exitCode = 1;
  return true;
}

async function main() {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((name) => !(name in BENCHMARKS));
  if (unknown.length > 0) {
    console.error(`unknown benchmark: ${unknown.join(', ')} (known: ${Object.keys(BENCHMARKS).join(', ')})`);
    process.exitCode = 2;
    return;
  }
  const names = asked.length > 0 ? asked : Object.keys(BENCHMARKS);
  const figures: Figure[] = [];
  const skipped: (Outcome['skipped'][number] & { bench: string })[] = [];
  for (const name of names) {
    const started = Date.now();
    console.error(`running ${name}…`);
    const outcome = await BENCHMARKS[name]!();
    // A bad figure ends the run at once, before the next benchmark takes the machine.
    if (refused(outcome.figures)) return;
    figures.push(...outcome.figures);
    skipped.push(...outcome.skipped.map((s) => ({ bench: name, ...s })));
    console.error(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }

  const cpu = cpus();
  const machine = {
    node: process.version,
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    platform: `${process.platform} ${process.arch}`,
    date: new Date().toISOString(),
  };
  console.log(`${machine.node}, ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB\n`);
  console.log(table(figures));
  const notes = figures.filter((f) => f.note).map((f) => `  ${f.figure}: ${f.note}`);
  if (notes.length > 0) console.log(`\nnotes:\n${notes.join('\n')}`);
  for (const s of skipped) console.log(`\nskipped: ${s.bench} / ${s.figure}: ${s.reason}`);

  // Four significant digits are more than the noise allows; the file is formatted as `npm run check` wants it.
  const rounded = (n: number) => Number(n.toPrecision(4));
  const kept = figures.map((f) => ({
    ...f,
    value: rounded(f.value),
    ...(f.floor && { floor: { ...f.floor, value: rounded(f.floor.value) } }),
    ...(f.ratio !== undefined && { ratio: rounded(f.ratio) }),
  }));
  // A run of some benchmarks keeps the others' last figures, each with the date it was measured.
  const file = join(import.meta.dirname, 'results.json');
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Partial<Results>) : {};
  const others = <T extends { bench: string }>(list: T[] = []) =>
    list.filter((item) => !names.includes(item.bench));
  const ran = { ...previous.ran, ...Object.fromEntries(names.map((name) => [name, machine.date])) };
  const before = previous.machine ? describeMachine(previous.machine) : undefined;
  const machines = {
    ...Object.fromEntries(Object.keys(previous.ran ?? {}).map((name) => [name, before ?? 'unknown'])),
    ...previous.machines,
    ...Object.fromEntries(names.map((name) => [name, describeMachine(machine)])),
  };
  const results: Results = {
    machine,
    ran,
    machines,
    figures: [...others(previous.figures), ...kept],
    skipped: [...others(previous.skipped), ...skipped],
  };
  // The figures kept from earlier runs too: the table is written from all of them.
  if (refused(results.figures)) return;
  const json = JSON.stringify(results);
  writeFileSync(file, await prettier(json, { ...(await resolveConfig(file)), filepath: file }));
  console.error(`\nwrote ${file}`);
  await writeDocsTable(results);
}

const describeMachine = (machine: Record<string, unknown>) =>
  `${String(machine.cpu)}, ${String(machine.cores)} cores, ${String(machine.memoryGiB)} GiB, Node ${String(machine.node)}, ${String(machine.platform)}`;

const DOCS = join(import.meta.dirname, '../docs/performance.md');
const START = '<!-- results: written by `npm run bench`, do not edit by hand -->';
const END = '<!-- end of results -->';

/** The table between the markers of docs/performance.md, from all figures kept in results.json. */
async function writeDocsTable(results: Results) {
  if (!existsSync(DOCS)) return;
  const text = readFileSync(DOCS, 'utf8');
  const [before, rest] = text.split(START);
  const after = rest?.split(END)[1];
  if (after === undefined) throw new Error(`docs/performance.md lacks the results markers`);
  const cell = (value: string) => value.replace(/\|/g, '\\|');
  const { ran, machines } = results;
  // Figures of different machines side by side say so: ratios compare within one run only.
  const byMachine = new Map<string, string[]>();
  for (const name of Object.keys(ran))
    byMachine.set(machines[name] ?? 'unknown', [...(byMachine.get(machines[name] ?? 'unknown') ?? []), name]);
  const lines = [
    byMachine.size === 1
      ? `Measured on ${[...byMachine.keys()][0]}.`
      : `Measured on: ${[...byMachine].map(([machine, names]) => `${names.join(', ')} on ${machine}`).join('; ')}.`,
    `Last run of each: ${Object.entries(ran)
      .map(([name, date]) => `${name} ${date.slice(0, 10)}`)
      .join(', ')}.`,
    '',
    '| benchmark | figure | value | floor | ratio |',
    '| --- | --- | --: | --- | --: |',
    ...results.figures.map(
      (f) =>
        `| ${f.bench} | ${cell(f.figure)} | ${format(f.value)} ${f.unit} | ${
          f.floor ? cell(`${f.floor.figure}: ${format(f.floor.value)} ${f.floor.unit}`) : ''
        } | ${f.ratio === undefined ? '' : format(f.ratio)} |`,
    ),
    ...(results.skipped.length > 0
      ? ['', ...results.skipped.map((s) => `Skipped: ${s.bench}, ${s.figure}: ${s.reason}.`)]
      : []),
  ];
  const updated = `${before}${START}\n\n${lines.join('\n')}\n\n${END}${after}`;
  writeFileSync(DOCS, await prettier(updated, { ...(await resolveConfig(DOCS)), filepath: DOCS }));
  console.error(`wrote ${DOCS}`);
}

await main();
