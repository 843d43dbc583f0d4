/**
 * What an agent submits to ask for a hold (interface.md, POST /api/v1/holds): the Core API reads a
 * submission with it and hands the parsed `HoldSubmission` to `submitSdkHold`. (The MCP proxy submits
 * from a tools/call, not from this shape; the CLI submits none.)
 */
import { z } from 'zod';
import { jsonObject, text } from './input.ts';

const agentIdentitySchema = z
  .object(
    {
      id: text(1, 200).meta({ description: 'Who acts.' }),
      label: text(0, 200)
        .nullable()
        .optional()
        .meta({ description: 'A display name. In the record: null when not given.' }),
    },
    { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an object with an id') },
  )
  .meta({ id: 'AgentIdentity' });

export const holdSubmissionSchema = z
  .object({
    tool_name: text(1, 200)
      .regex(/^[A-Za-z0-9_.:/-]+$/, 'may contain only A-Z a-z 0-9 _ . : / -')
      .meta({ description: 'Business name of the action. Its first use registers the tool as `new`.' }),
    arguments: jsonObject
      .optional()
      .meta({ description: 'Parameters of the action; kept in evidence. Default `{}`.' }),
    agent_identity: agentIdentitySchema,
    context: jsonObject
      .optional()
      .meta({ description: 'Extra information for the approver; kept in evidence. Default `{}`.' }),
    idempotency_key: text(1, 255).meta({ description: 'Unique per logical action, per workspace.' }),
  })
  .meta({
    id: 'HoldSubmission',
    description: 'Unknown top-level fields are ignored. Lengths count UTF-16 code units.',
    examples: [
      {
        tool_name: 'send_invoice',
        arguments: { amount: 1200, currency: 'EUR' },
        agent_identity: { id: 'billing-bot', label: 'Billing bot' },
        context: { ticket: 'T-1042' },
        idempotency_key: 'invoice-1042',
      },
    ],
  });

export type HoldSubmission = z.infer<typeof holdSubmissionSchema>;
