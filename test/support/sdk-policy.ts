/**
 * The workspace both SDKs' suites run against (TypeScript and Python): one tool of each
 * classification, a rule that holds invoices for the admin and one that denies deletions.
 */
export const SDK_POLICY = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_account, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
rules:
  - name: Invoices need the admin
    tool: send_invoice
    effect: approval
    approvers: [admin@acme.test]
    timeout_minutes: 30
  - name: No deletions
    tool: delete_account
    effect: deny
    reason: Accounts are closed by support
`;
