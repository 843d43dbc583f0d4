/** The oversight report: figures, charts and tables; small enough to be written in one go. */
import type { Readable } from 'node:stream';
import type { OversightReport } from '../../services/reports.ts';
import { barChart, columnChart, figures } from './charts.ts';
import { endDocument } from './page-streams.ts';
import { evidenceSection, filtersLine, sectionTitle, Sent, startDocument } from './document.ts';
import { accentOf, type Doc, ms, MUTED, percent, stamp, STATUS_COLOURS } from './style.ts';
import { table } from './table.ts';

function duration(value: number | null): string {
  if (value === null) return '—';
  if (value < 60_000) return `${(value / 1000).toFixed(1)} s`;
  if (value < 3_600_000) return `${(value / 60_000).toFixed(1)} min`;
  return `${(value / 3_600_000).toFixed(1)} h`;
}

/** The figures at the top: how the holds were decided, how fast, and their follow-ups. */
function summary(doc: Doc, report: OversightReport) {
  const { decidedBy, timeToDecision: time, expiry, fourEyes, followUps } = report;
  sectionTitle(doc, 'Summary');
  figures(doc, [
    ['Holds', String(report.holds)],
    ['Decided by rule', `${decidedBy.rule} (${percent(decidedBy.rule, report.holds)})`],
    ['Decided by people', `${decidedBy.people} (${percent(decidedBy.people, report.holds)})`],
    ['Undecided (pending, expired)', String(decidedBy.undecided)],
    ['Median time to decision', duration(time.medianMs)],
    ['95th percentile', duration(time.p95Ms)],
    ['Expiry rate', expiry.rate === null ? '—' : `${(100 * expiry.rate).toFixed(1)} %`],
    ['Four-eyes holds', String(fourEyes.holds)],
    ['Reminders sent', String(followUps.reminders)],
    [
      'Holds escalated',
      `${followUps.holdsEscalated} (${followUps.escalations} step${followUps.escalations === 1 ? '' : 's'})`,
    ],
    ['Decisions by delegates', String(followUps.delegatedDecisions)],
  ]);
}

function charts(doc: Doc, report: OversightReport) {
  const time = report.timeToDecision;
  sectionTitle(doc, 'Outcomes', 130);
  barChart(
    doc,
    report.outcomes.map(({ status, holds }) => ({
      label: status.replace('_', ' '),
      value: holds,
      colour: STATUS_COLOURS[status] ?? MUTED,
    })),
  );
  sectionTitle(doc, `Time to a human decision (${time.decided} holds)`, 150);
  columnChart(
    doc,
    time.histogram.map(({ bucket, holds }) => ({ label: bucket, value: holds })),
    accentOf(report),
  );
}

async function expiryAndFourEyes(doc: Doc, { expiry, fourEyes }: OversightReport) {
  sectionTitle(doc, 'Expiry and four-eyes');
  await table(
    doc,
    [
      { title: 'Holds that waited for people', width: 160 },
      { title: 'Finished', width: 80, align: 'right' },
      { title: 'Expired', width: 80, align: 'right' },
      { title: 'Expiry rate', width: 80, align: 'right' },
    ],
    [
      [
        String(expiry.waited),
        String(expiry.finished),
        String(expiry.expired),
        percent(expiry.expired, expiry.finished),
      ],
    ],
  );
  await table(
    doc,
    [
      { title: 'Four-eyes holds', width: 160 },
      { title: 'Approved', width: 80, align: 'right' },
      { title: 'Rejected', width: 80, align: 'right' },
      { title: 'Expired', width: 80, align: 'right' },
    ],
    [
      [
        String(fourEyes.holds),
        String(fourEyes.approved),
        String(fourEyes.rejected),
        String(fourEyes.expired),
      ],
    ],
  );
}

async function channelsAndTools(doc: Doc, report: OversightReport) {
  sectionTitle(doc, 'Human decisions per channel');
  await table(
    doc,
    [
      { title: 'Channel', width: 160 },
      { title: 'Decisions', width: 80, align: 'right' },
    ],
    report.channels.map(({ channel, decisions }) => [channel, String(decisions)]),
  );
  sectionTitle(doc, 'Per tool');
  await table(
    doc,
    [
      { title: 'Connection', width: 70, wrap: true },
      { title: 'Tool', width: 120, wrap: true },
      { title: 'Holds', width: 45, align: 'right' },
      { title: 'Allowed', width: 45, align: 'right' },
      { title: 'Denied', width: 45, align: 'right' },
      { title: 'Approved', width: 50, align: 'right' },
      { title: 'Rejected', width: 50, align: 'right' },
      { title: 'Expired', width: 45, align: 'right' },
      { title: 'Pending', width: 45, align: 'right' },
    ],
    report.tools.map((t) => [
      t.connection,
      t.tool,
      ...[t.holds, t.allowed, t.denied, t.approved, t.rejected, t.expired, t.pending].map(String),
    ]),
  );
}

async function approversAndUnclassified(doc: Doc, report: OversightReport) {
  sectionTitle(doc, 'Per approver');
  await table(
    doc,
    [
      { title: 'Name', width: 110, wrap: true },
      { title: 'E-mail', width: 140, wrap: true },
      { title: 'Decisions', width: 50, align: 'right' },
      { title: 'Approvals', width: 50, align: 'right' },
      { title: 'Rejections', width: 50, align: 'right' },
      { title: 'As delegate', width: 55, align: 'right' },
      { title: 'Mean time', width: 60, align: 'right' },
    ],
    report.approvers.map((a) => [
      a.name,
      a.email,
      String(a.decisions),
      String(a.approvals),
      String(a.rejections),
      String(a.asDelegate),
      duration(a.meanMs),
    ]),
  );
  sectionTitle(doc, 'Tools still unclassified');
  await table(
    doc,
    [
      { title: 'Connection', width: 100, wrap: true },
      { title: 'Tool', width: 180, wrap: true },
      { title: 'First seen', width: 110 },
      { title: 'Holds in period', width: 90, align: 'right' },
    ],
    report.unclassified.map((u) => [u.connection, u.tool, stamp(ms(u.firstSeenAt)), String(u.holds)]),
  );
}

export function oversightPdf(report: OversightReport): Readable {
  const doc = startDocument(report, 'Oversight report', 'portrait', true);
  void (async () => {
    filtersLine(doc, report);
    summary(doc, report);
    charts(doc, report);
    await expiryAndFourEyes(doc, report);
    await channelsAndTools(doc, report);
    await approversAndUnclassified(doc, report);
    evidenceSection(doc, report);
    endDocument(doc);
  })().catch((error: unknown) => doc.destroy(error as Error));
  return new Sent(doc);
}
