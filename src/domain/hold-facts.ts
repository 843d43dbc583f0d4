/** The facts a hold was decided on, as `decide` (policy.ts) records them in its `hold.submitted` evidence entry. */
import type { Frequency, RuleMatch } from './rules.ts';

export type ConditionFact = RuleMatch['conditions'][number];

/** Every field may be absent: a hold of a classified tool has no conditions, one of a rule no frequency. */
export interface HoldFacts {
  conditions?: ConditionFact[];
  frequency?: Frequency & { count: number };
  classification?: string;
}
