/**
 * The form that registers an MCP server, or edits one. Header values are never put in it, not even
 * when a refused form comes back: it names the stored headers and asks for typed ones again.
 */
import { DEFAULT_CALL_TIMEOUT_SECONDS, MAX_CALL_TIMEOUT_SECONDS } from '../../../domain/mcp-servers.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import type { FieldErrors } from '../../forms/form.ts';
import { type Html, html, when } from '../../html.ts';
import { checked, configFields, describedBy, fieldError, inputField } from '../form-fields.ts';
import { codeList, durationText, serverPath } from './card.ts';

export interface ServerFormValues {
  /** Whether it edits a registered server (its slug is then fixed) rather than registering one. */
  editing: boolean;
  slug: string;
  name: string;
  url: string;
  /** The call timeout in seconds as typed (empty: the default). */
  callTimeout: string;
  /** The names of the stored headers (editing only). */
  stored: string[];
  clear: boolean;
  /** The configuration's version the form was read at (none: a form from before versions). */
  version: number | undefined;
}

export const blankServer = (version: number): ServerFormValues => ({
  editing: false,
  slug: '',
  name: '',
  url: '',
  callTimeout: '',
  stored: [],
  clear: false,
  version,
});

function headersField(values: ServerFormValues, error: string | undefined): Html {
  const { editing } = values;
  return html`<label for="s-headers"
      >Headers sent upstream
      <span class="muted"
        >(optional; one <code>Name: value</code> per line, like <code>Authorization: Bearer …</code>)</span
      ></label
    >
    <textarea
      id="s-headers"
      name="headers"
      rows="3"
      autocomplete="off"
      spellcheck="false"
      placeholder="${editing ? 'Leave empty to keep the stored headers' : 'Authorization: Bearer …'}"
      ${describedBy('s-headers', error)}
    ></textarea>
    ${fieldError('s-headers', error)}
    <p class="muted" style="margin:0">
      Stored encrypted and never shown again, not even here.
      ${
        editing
          ? html`Stored now: ${values.stored.length === 0 ? 'none' : codeList(values.stored)}. Typed headers
            replace the stored ones; leave the box empty to keep them (on the same origin).`
          : null
      }
    </p>
    ${when(
      editing,
      () =>
        html`<label class="choice"
          ><input type="checkbox" name="clear_headers" value="yes" ${checked(values.clear)} /> Remove the
          stored headers (send none)</label
        >`,
    )}`;
}

function callTimeoutField(value: string, error: string | undefined): Html {
  return html`<label for="s-call_timeout_seconds"
      >Call timeout in seconds
      <span class="muted"
        >(optional; default ${DEFAULT_CALL_TIMEOUT_SECONDS}, ${durationText(DEFAULT_CALL_TIMEOUT_SECONDS)}; 1
        to ${MAX_CALL_TIMEOUT_SECONDS})</span
      ></label
    >
    <input
      id="s-call_timeout_seconds"
      name="call_timeout_seconds"
      type="number"
      min="1"
      max="${MAX_CALL_TIMEOUT_SECONDS}"
      step="1"
      inputmode="numeric"
      value="${value}"
      placeholder="${DEFAULT_CALL_TIMEOUT_SECONDS}"
      aria-describedby="s-call_timeout_seconds-note${error ? ' s-call_timeout_seconds-error' : ''}"
      ${error ? html` aria-invalid="true"` : null}
    />
    ${fieldError('s-call_timeout_seconds', error)}
    <p class="muted" id="s-call_timeout_seconds-note" style="margin:0">
      How long a tool call, allowed or approved, may wait for the server's answer. Progress the server reports
      starts the clock again. A call that times out is not run again: an approved one is marked “outcome
      unknown” and its approvers are told.
    </p>`;
}

export function serverForm(session: AppSession, values: ServerFormValues, errors: FieldErrors): Html {
  const { editing } = values;
  const input = (name: 'slug' | 'name' | 'url', label: Html, extra: Html) =>
    inputField({
      id: `s-${name}`,
      name,
      label,
      type: name === 'url' ? 'url' : 'text',
      value: values[name],
      error: errors[name],
      extra,
    });
  return html`<form
    method="post"
    action="${editing ? serverPath(values.slug) : '/app/admin/mcp-servers'}"
    class="decide"
  >
    ${configFields(session, values.version)}
    ${
      editing
        ? html`<p style="margin:0"><strong>Slug</strong><br /><code>${values.slug}</code></p>
            ${fieldError('s-slug', errors.slug)}`
        : input(
            'slug',
            html`Slug
              <span class="muted"
                >(lowercase letters, digits and dashes; the end of the proxy URL; fixed once registered)</span
              >`,
            html`required maxlength="63" pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?" placeholder="files"
            autocomplete="off" spellcheck="false"`,
          )
    }
    ${input(
      'name',
      html`Name <span class="muted">(the connection name rules and tool classifications use)</span>`,
      html`required maxlength="200" placeholder="Files" autocomplete="off"`,
    )}
    ${when(
      editing,
      () =>
        html`<p class="muted" style="margin:0">
          Renaming changes the connection: rules and classifications that name the old one no longer match,
          and its tools are <em>new</em> again under the new name.
        </p>`,
    )}
    ${input(
      'url',
      html`Upstream URL <span class="muted">(its streamable HTTP endpoint, http or https)</span>`,
      html`required maxlength="2000" placeholder="https://mcp.example.com/mcp" autocomplete="off"
      spellcheck="false"`,
    )}
    ${when(
      editing,
      () =>
        html`<p class="muted" id="s-url-note" style="margin:0">
          A URL on another origin (scheme, host or port) drops the stored headers: they were given for this
          one. Type them again below to send them to the new one.
        </p>`,
    )}
    ${headersField(values, errors.headers)}
    ${callTimeoutField(values.callTimeout, errors.call_timeout_seconds)}
    <div class="buttons">
      <button type="submit">${editing ? 'Save changes' : 'Register server'}</button>
      ${when(editing, () => html`<a class="button secondary" href="/app/admin/mcp-servers">Cancel</a>`)}
    </div>
  </form>`;
}
