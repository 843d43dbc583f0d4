/**
 * `simulate`'s report: as text, or as Markdown for a pull-request comment (`--format markdown`), and
 * with `--fail-on-change` an exit code that fails a CI check when the draft would decide differently.
 */
import { describeTypeMismatch } from '../../domain/rules.ts';
import { followUpsText, type SimulationReport } from '../../services/simulate-policy.ts';
import { type Answer, UsageError, type Values } from '../usage.ts';

/** The exit code of `simulate --fail-on-change` when some call would be decided differently. */
export const DECISIONS_WOULD_CHANGE = 5;

type Example = SimulationReport['examples'][number];

function side(decision: Example['actual'], notes: string[] = []): string {
  const approval =
    decision.effect === 'approval' ? ` x${decision.approvals_required}, ${decision.timeout_minutes} min` : '';
  return `${decision.effect}${approval} (${[decision.rule, ...notes].join('; ')})`;
}

/** What the draft would decide for an example, with its type mismatches and follow-ups. */
function draftSide(example: Example): string {
  const mismatches = example.draft.type_mismatches.map(describeTypeMismatch);
  // The follow-ups of a hold the draft makes pending, when it has any.
  const followUps =
    example.draft.remind || example.draft.escalate.length > 0 ? `; ${followUpsText(example.draft)}` : '';
  return side(example.draft, mismatches) + followUps;
}

const pendingCount = (report: SimulationReport) => report.pending.reduce((sum, p) => sum + p.holds, 0);

function describeSimulation(report: SimulationReport): string {
  const lines = [
    `Replayed ${report.holds} holds from ${report.period.from} to ${report.period.to}` +
      ` (${report.rules.current} rules now, ${report.rules.draft} in the draft).`,
    `${report.changed} would be decided differently, ${report.unchanged} the same.`,
    ...report.transitions.map((t) => `  ${t.from} -> ${t.to}: ${t.count}`),
  ];
  if (pendingCount(report) > 0) lines.push(`The draft makes ${pendingCount(report)} of them pending:`);
  for (const p of report.pending) lines.push(`  ${p.rule}: ${p.holds}; ${followUpsText(p)}`);
  if (report.examples.length > 0) lines.push('Examples:');
  for (const e of report.examples)
    lines.push(
      `  ${e.id} ${e.created_at} ${e.connection}/${e.tool_name} by ${e.agent}: ${side(e.actual)} -> ${draftSide(e)}`,
    );
  return lines.join('\n');
}

/** A table cell: names come from the draft and the agents, so nothing in them may break the table. */
const cell = (text: string | number) =>
  String(text).replaceAll('\\', '\\\\').replaceAll('|', '\\|').replaceAll('<', '&lt;').replace(/\s+/g, ' ');

function table(head: string[], rows: (string | number)[][]): string[] {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ];
}

function markdownSimulation(report: SimulationReport): string {
  const headline =
    report.changed === 0
      ? `**No call would be decided differently** by the draft: ${report.holds} holds replayed`
      : `**${report.changed} of ${report.holds} calls would be decided differently** by the draft`;
  const lines = [
    '### Approvals: what the draft would decide',
    '',
    `${headline} (from ${report.period.from} to ${report.period.to}; ${report.rules.current} rules now, ${report.rules.draft} in the draft).`,
  ];
  if (report.transitions.length > 0)
    lines.push(
      '',
      ...table(
        ['now', 'with the draft', 'calls'],
        report.transitions.map((t) => [t.from, t.to, t.count]),
      ),
    );
  if (report.pending.length > 0)
    lines.push(
      '',
      `The draft makes ${pendingCount(report)} of them pending:`,
      '',
      ...table(
        ['rule', 'calls', 'follow-ups'],
        report.pending.map((p) => [p.rule, p.holds, followUpsText(p)]),
      ),
    );
  if (report.examples.length > 0)
    lines.push(
      '',
      `<details><summary>Examples (${report.examples.length})</summary>`,
      '',
      ...table(
        ['hold', 'at', 'call', 'now', 'with the draft'],
        report.examples.map((e) => [
          e.id,
          e.created_at,
          `${e.connection}/${e.tool_name} by ${e.agent}`,
          side(e.actual),
          draftSide(e),
        ]),
      ),
      '',
      '</details>',
    );
  return lines.join('\n');
}

/** The report as the options ask for it; exit code 5 with --fail-on-change when anything changed. */
export function simulationAnswer(report: SimulationReport, values: Values): Answer {
  const format = values.format ?? 'text';
  if (format !== 'text' && format !== 'markdown') throw new UsageError('--format is text or markdown');
  const text = format === 'markdown' ? markdownSimulation(report) : describeSimulation(report);
  const failed = values['fail-on-change'] === true && report.changed > 0;
  return [report, text, failed ? DECISIONS_WOULD_CHANGE : 0];
}
