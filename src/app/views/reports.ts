/** The Reports page: a period (and a tool or an agent) to download oversight or activity as PDF or CSV. */
import { type Html, html } from '../html.ts';

/** `query`: the form's values as last sent (`from`, `to` given); `problems`: why no report was made. */
export function reportsView(
  query: Record<string, string | undefined>,
  from: string,
  to: string,
  problems: { field: string; message: string }[],
): Html {
  return html`<h1>Reports</h1>
    <p>
      <strong>Oversight</strong>: how holds were decided in the period: outcomes, rules against people,
      channels, time to decision, expiries, four-eyes, per tool and per approver. <strong>Activity</strong>:
      one line per hold. Both name the evidence chain head they were built from.
    </p>
    ${
      problems.length > 0
        ? html`<div class="error" role="alert">
            <p>The report could not be made:</p>
            <ul>
              ${problems.map((p) => html`<li>${p.field}: ${p.message}</li>`)}
            </ul>
          </div>`
        : null
    }
    <form method="get" action="/app/reports/oversight" class="card filters">
      <div>
        <label for="r-from">From</label><input id="r-from" name="from" type="date" value="${from}" required />
      </div>
      <div>
        <label for="r-to">To (not included)</label
        ><input id="r-to" name="to" type="date" value="${to}" required />
      </div>
      <div>
        <label for="r-tool">Tool (optional)</label
        ><input id="r-tool" name="tool" type="text" value="${query.tool ?? ''}" />
      </div>
      <div>
        <label for="r-agent">Agent (optional)</label
        ><input id="r-agent" name="agent" type="text" value="${query.agent ?? ''}" />
      </div>
      <div class="buttons">
        <button type="submit" name="format" value="pdf">Oversight (PDF)</button>
        <button type="submit" name="format" value="csv">Oversight (CSV)</button>
        <button type="submit" name="format" value="pdf" formaction="/app/reports/activity">
          Activity (PDF)
        </button>
        <button type="submit" name="format" value="csv" formaction="/app/reports/activity">
          Activity (CSV)
        </button>
      </div>
    </form>
    <p class="muted">
      The same reports come from <code>GET /api/v1/reports/oversight</code> and <code>/activity</code> with an
      API key.
    </p>`;
}
