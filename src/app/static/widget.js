/*
 * <approvals-inbox> — an approver's pending actions, embeddable in any internal tool:
 *
 *   <script src="https://approvals.example.com/widget.js" defer></script>
 *   <approvals-inbox token="emb_..."></approvals-inbox>
 *
 * The token is an embed token minted in the app (Widget page). The list refreshes every few
 * seconds, so an action decided anywhere else leaves it. Values are set as text, never as markup.
 */
(() => {
  const origin = new URL(document.currentScript ? document.currentScript.src : location.href).origin;
  const REFRESH_MS = 3000;
  const style = `
    :host { display: block; font: 14px/1.4 system-ui, sans-serif; color: #1a1a1a; }
    .hold { border: 1px solid #d4d4d8; border-radius: 6px; padding: 0.75rem; margin: 0 0 0.5rem; }
    .summary { font-family: ui-monospace, monospace; background: #f4f4f5; padding: 0.4rem; white-space: pre-wrap; word-break: break-word; }
    .meta { color: #52525b; font-size: 0.85em; }
    button { font: inherit; margin-right: 0.4rem; padding: 0.3rem 0.8rem; border-radius: 4px; border: 1px solid #71717a; background: #fff; cursor: pointer; }
    button.approve { background: #166534; border-color: #166534; color: #fff; }
    button.reject { background: #991b1b; border-color: #991b1b; color: #fff; }
    a.review { font-weight: 600; color: #1f4fd1; }
    form.changes { margin: 0.5rem 0 0; display: grid; gap: 0.4rem; }
    form.changes[hidden], form.changes .error:empty { display: none; }
    form.changes label { display: grid; gap: 0.15rem; font-size: 0.9em; }
    form.changes input { font: inherit; font-family: ui-monospace, monospace; padding: 0.3rem; border: 1px solid #71717a; border-radius: 4px; min-height: 1.8rem; }
    .empty, .error { color: #52525b; }
  `;

  const el = (tag, attributes = {}, text) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
  };

  /** A box as text: a string as it is, anything else as JSON (what `typed` reads back). */
  const boxText = (value) =>
    typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);

  /**
   * What an approver typed, as the submitted value's type: a string as typed, a number or a boolean as
   * one, anything else (or an argument not submitted) as JSON; `{ error }` when it is not such a value.
   */
  const typed = (submitted, found, text) => {
    if (found && typeof submitted === 'string') return { value: text };
    if (found && typeof submitted === 'number') {
      const number = Number(text.trim());
      return text.trim() !== '' && Number.isFinite(number)
        ? { value: number }
        : { error: 'must be a number' };
    }
    if (found && typeof submitted === 'boolean')
      return ['true', 'false'].includes(text.trim())
        ? { value: text.trim() === 'true' }
        : { error: 'must be true or false' };
    try {
      return { value: JSON.parse(text) };
    } catch {
      return { error: 'must be a JSON value' };
    }
  };

  class ApprovalsInbox extends HTMLElement {
    connectedCallback() {
      this.root = this.shadowRoot || this.attachShadow({ mode: 'open' });
      this.root.replaceChildren(el('style', {}, style), el('div', { part: 'list', role: 'list' }));
      this.refresh();
      this.timer = setInterval(() => this.refresh(), REFRESH_MS);
    }

    disconnectedCallback() {
      clearInterval(this.timer);
    }

    get base() {
      return (this.getAttribute('base-url') || origin).replace(/\/+$/, '');
    }

    async api(path, init = {}) {
      const response = await fetch(`${this.base}${path}`, {
        ...init,
        headers: {
          Authorization: `Bearer ${this.getAttribute('token') || ''}`,
          'Content-Type': 'application/json',
        },
      });
      if (!response.ok) {
        const error = new Error(response.status === 401 ? 'signed-out' : `HTTP ${response.status}`);
        const body = await response.json().catch(() => ({}));
        error.code = body.error;
        error.detail = body.detail;
        throw error;
      }
      return response.json();
    }

    async refresh() {
      const list = this.root.querySelector('[part=list]');
      try {
        const { holds } = await this.api('/widget/api/holds');
        list.replaceChildren(
          ...(holds.length
            ? holds.map((hold) => this.card(hold))
            : [el('p', { class: 'empty' }, 'Nothing waits for you.')]),
        );
        this.dispatchEvent(new CustomEvent('approvals-refresh', { detail: { count: holds.length } }));
      } catch (error) {
        const text =
          error.message === 'signed-out'
            ? 'This embed token is no longer valid.'
            : 'The approval service cannot be reached.';
        list.replaceChildren(el('p', { class: 'error', role: 'alert' }, text));
      }
    }

    card(hold) {
      const card = el('div', { class: 'hold', role: 'listitem', 'data-hold': hold.id });
      card.append(
        el('div', {}, `${hold.agent} wants to run ${hold.tool_name} on ${hold.connection}`),
        el('div', { class: 'summary' }, hold.summary),
      );
      const facts = [];
      if (hold.expires_at) facts.push(`decide by ${new Date(hold.expires_at).toLocaleString()}`);
      if (hold.approvals_required > 1)
        facts.push(`${hold.approvals_received} of ${hold.approvals_required} approvals`);
      card.append(el('div', { class: 'meta' }, facts.join(' · ')));
      // Not every argument fits in the summary: no decision on it, a link to the full page instead.
      if (!hold.complete) {
        const why = hold.changed
          ? 'An approver changed it: review the change on its page before deciding.'
          : 'Not every argument fits here: review it in full before deciding.';
        card.append(
          el('p', { class: 'meta' }, why),
          el('a', { class: 'review', href: hold.review_url, target: '_blank', rel: 'noopener' }, 'Review'),
        );
        return card;
      }
      const actions = el('div');
      for (const verdict of ['approve', 'reject']) {
        const button = el(
          'button',
          { type: 'button', class: verdict },
          verdict === 'approve' ? 'Approve' : 'Reject',
        );
        button.addEventListener('click', () => this.decide(hold.id, verdict, card, hold.review_url));
        actions.append(button);
      }
      card.append(actions);
      // Where the rule lets an approver change arguments first: a box for each, then approve.
      if (hold.editable && hold.editable.length > 0) {
        const open = el('button', { type: 'button', 'aria-expanded': 'false' }, 'Approve with changes…');
        actions.append(open);
        const form = this.changesForm(hold, card);
        open.addEventListener('click', () => {
          form.hidden = !form.hidden;
          open.setAttribute('aria-expanded', String(!form.hidden));
          if (!form.hidden) form.querySelector('input').focus();
        });
        card.append(form);
      }
      return card;
    }

    /** The editable arguments' boxes, filled with their values as submitted; hidden until asked for. */
    changesForm(hold, card) {
      const values = hold.values || {};
      const form = el('form', { class: 'changes' });
      form.hidden = true;
      for (const path of hold.editable) {
        const label = el('label', {}, path);
        label.append(el('input', { name: path, value: boxText(values[path]), autocomplete: 'off' }));
        form.append(label);
      }
      const problem = el('p', { class: 'error', role: 'alert' });
      form.append(problem, el('div'));
      form.lastChild.append(el('button', { type: 'submit', class: 'approve' }, 'Approve with these values'));
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        const changes = {};
        const wrong = [];
        for (const path of hold.editable) {
          const text = form.elements.namedItem(path).value;
          const found = Object.hasOwn(values, path);
          // A box left as it was changes nothing.
          if (found ? text === boxText(values[path]) : text === '') continue;
          const read = typed(values[path], found, text);
          if ('error' in read) wrong.push(`${path} ${read.error}`);
          else changes[path] = read.value;
        }
        if (wrong.length > 0) problem.textContent = `Not approved: ${wrong.join('; ')}.`;
        else this.decide(hold.id, 'approve', card, hold.review_url, changes);
      });
      return form;
    }

    async decide(id, verdict, card, reviewUrl, changes = {}) {
      for (const button of card.querySelectorAll('button')) button.disabled = true;
      let notice = null;
      let signHere = false;
      try {
        const result = await this.api(`/widget/api/holds/${encodeURIComponent(id)}/decision`, {
          method: 'POST',
          body: JSON.stringify(Object.keys(changes).length > 0 ? { verdict, changes } : { verdict }),
        });
        if (result.outcome === 'closed' || result.outcome === 'already_decided')
          notice = `Already decided (${result.status}).`;
        this.dispatchEvent(new CustomEvent('approvals-decision', { detail: { id, verdict, ...result } }));
      } catch (error) {
        // A passkey signs only on the service's own page (WebAuthn binds it to that site).
        signHere = error.code === 'passkey_required';
        notice =
          error.message === 'signed-out'
            ? 'This embed token is no longer valid.'
            : signHere
              ? 'Not approved: this action must be signed with your passkey. '
              : error.code === 'validation_failed' || error.code === 'workspace_frozen'
                ? `Not approved: ${error.detail}`
                : 'The decision could not be sent. Try again.';
      }
      await this.refresh();
      if (notice) {
        const shown = el('p', { class: 'error', role: 'alert' }, notice);
        if (signHere && reviewUrl)
          shown.append(
            el(
              'a',
              { class: 'review', href: reviewUrl, target: '_blank', rel: 'noopener' },
              'Approve it on its page',
            ),
          );
        this.root.querySelector('[part=list]').prepend(shown);
      }
    }
  }

  if (!customElements.get('approvals-inbox')) customElements.define('approvals-inbox', ApprovalsInbox);
})();
