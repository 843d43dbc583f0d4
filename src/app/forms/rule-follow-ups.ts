/**
 * The rule form's approval-only parts after the approvers: reminders, escalation steps, passkey
 * signing, approval in bulk, approval in the requester's own client, editable arguments and claims
 * (docs/rules.md). Read as typed, then made into the rule's
 * fields, each problem on its form field (`remind.before`, `escalate.1.after`, `claim.minutes`).
 * Pure: no I/O.
 */
import { z } from 'zod';
import { DURATION } from '../../domain/follow-ups.ts';
import type { RuleDefinition } from '../../domain/rules.ts';
import type { Form } from '../respond.ts';
import { type FieldErrors, list, text } from './form.ts';

/** The workspace file's limit on escalation steps: the form always offers this many rows. */
export const MAX_STEPS = 5;
const MAX_REMINDERS = 10;
const WHOLE = /^\d{1,10}$/;
/** A yes/no the rule may leave unsaid: '' (unsaid: the default), 'true' or 'false'. */
const TRI_STATE = ['', 'true', 'false'];

export interface StepRow {
  after: string;
  to: string[];
}

/** These parts as typed: strings, kept as they are so a refused form comes back unchanged. */
export interface FollowUpValues {
  remind_before: string;
  remind_every: string;
  /** The escalation steps typed, empty rows left out. */
  steps: StepRow[];
  signed: string;
  bulk: string;
  self_approval: string;
  /** The editable arguments' paths, separated by commas. */
  editable: string;
  claim_minutes: string;
  claim_halts: string;
}

export const blankFollowUps: FollowUpValues = {
  remind_before: '',
  remind_every: '',
  steps: [],
  signed: '',
  bulk: '',
  self_approval: '',
  editable: '',
  claim_minutes: '',
  claim_halts: '',
};

const fields = z.object({
  remind_before: text(),
  remind_every: text(),
  signed: text(),
  bulk: text(),
  self_approval: text(),
  editable: text(),
  claim_minutes: text(),
  claim_halts: text(),
});

const stepFields = z.object({ after: text(), to: list() });

/** Reads these parts of the posted form; empty step rows are dropped, so rows are those shown again. */
export function readFollowUps(form: Form | undefined): FollowUpValues {
  const typed = fields.safeParse(form ?? {});
  const steps: StepRow[] = [];
  for (let row = 0; row < MAX_STEPS; row++) {
    const step = stepFields.parse({ after: form?.[`esc_after_${row}`], to: form?.[`esc_to_${row}`] });
    if (step.after || step.to.length > 0) steps.push(step);
  }
  return { ...(typed.success ? typed.data : blankFollowUps), steps };
}

const yesNo = (value: boolean | undefined) => (value === undefined ? '' : String(value));

/** A stored rule's parts as the form shows them. */
export const valuesOfFollowUps = (rule: RuleDefinition): FollowUpValues => ({
  remind_before: rule.remind?.before?.join(', ') ?? '',
  remind_every: rule.remind?.every ?? '',
  steps: (rule.escalate ?? []).map((step) => ({ after: step.after, to: step.to })),
  signed: yesNo(rule.signed),
  bulk: yesNo(rule.bulk),
  self_approval: yesNo(rule.self_approval),
  editable: rule.editable?.join(', ') ?? '',
  claim_minutes: rule.claim?.minutes === undefined ? '' : String(rule.claim.minutes),
  claim_halts: yesNo(rule.claim?.halts_escalation),
});

const DURATION_WORDS = 'Write a duration like 30m, 2h or 1d';
/** As the workspace file takes them (config-schema.ts): a dotted path, no spaces. */
const ARGUMENT_PATH = /^[^.\s]+(\.[^.\s]+)*$/;
const MAX_EDITABLE = 50;

/**
 * These parts of the rule, as far as they can be read; each problem goes to `errors` under its form
 * field. Only an approval rule has them: another effect leaves them out (the form hides nothing).
 */
export function draftFollowUps(
  values: FollowUpValues,
  approval: boolean,
  errors: FieldErrors,
): Partial<RuleDefinition> {
  if (!approval) return {};
  const problem = (field: string, message: string) => (errors[field] ??= message);
  const before = values.remind_before
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (!before.every((item) => DURATION.test(item)))
    problem('remind.before', `${DURATION_WORDS}, several separated by commas.`);
  else if (before.length > MAX_REMINDERS)
    problem('remind.before', `Give at most ${MAX_REMINDERS} reminders.`);
  const every = values.remind_every;
  if (every && !DURATION.test(every)) problem('remind.every', `${DURATION_WORDS}.`);
  const remind = {
    ...(before.length > 0 && { before }),
    ...(every !== '' && { every }),
  };
  values.steps.forEach((step, row) => {
    if (!DURATION.test(step.after)) problem(`escalate.${row}.after`, `${DURATION_WORDS}.`);
    if (step.to.length === 0) problem(`escalate.${row}.to`, 'Choose at least one approver to add.');
  });
  const claimMinutes = values.claim_minutes;
  const minutes = Number(claimMinutes);
  if (claimMinutes && (!WHOLE.test(claimMinutes) || minutes < 1 || minutes > 1440))
    problem('claim.minutes', 'Must be a whole number of minutes from 1 to 1440.');
  const yesOrNo = (field: string, value: string) => {
    if (!TRI_STATE.includes(value)) problem(field, 'Choose one of the options.');
    return value === '' || !TRI_STATE.includes(value) ? undefined : value === 'true';
  };
  const editable = values.editable
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (!editable.every((path) => ARGUMENT_PATH.test(path) && path.length <= 200))
    problem('editable', 'Name arguments as conditions do (amount, customer.country), separated by commas.');
  else if (new Set(editable).size !== editable.length) problem('editable', 'Name each argument once.');
  else if (editable.length > MAX_EDITABLE) problem('editable', `Name at most ${MAX_EDITABLE} arguments.`);
  const signed = yesOrNo('signed', values.signed);
  const bulk = yesOrNo('bulk', values.bulk);
  const selfApproval = yesOrNo('self_approval', values.self_approval);
  const halts = yesOrNo('claim.halts_escalation', values.claim_halts);
  const claim = {
    ...(claimMinutes !== '' && WHOLE.test(claimMinutes) && { minutes }),
    ...(halts !== undefined && { halts_escalation: halts }),
  };
  return {
    ...(Object.keys(remind).length > 0 && { remind }),
    ...(values.steps.length > 0 && { escalate: values.steps }),
    ...(signed !== undefined && { signed }),
    ...(bulk !== undefined && { bulk }),
    ...(selfApproval !== undefined && { self_approval: selfApproval }),
    ...(editable.length > 0 && { editable }),
    ...(Object.keys(claim).length > 0 && { claim }),
  };
}
