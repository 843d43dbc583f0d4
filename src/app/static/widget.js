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
    .empty, .error { color: #52525b; }
  `;

  const el = (tag, attributes = {}, text) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    return node;
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
        error.code = (await response.json().catch(() => ({}))).error;
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
        card.append(
          el('p', { class: 'meta' }, 'Not every argument fits here: review it in full before deciding.'),
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
      // Where the rule lets an approver change arguments first, the hold's page has the boxes.
      if (hold.editable && hold.editable.length > 0)
        actions.append(
          el(
            'a',
            { class: 'review', href: hold.review_url, target: '_blank', rel: 'noopener' },
            'Approve with changes',
          ),
        );
      card.append(actions);
      return card;
    }

    async decide(id, verdict, card, reviewUrl) {
      for (const button of card.querySelectorAll('button')) button.disabled = true;
      let notice = null;
      let signHere = false;
      try {
        const result = await this.api(`/widget/api/holds/${encodeURIComponent(id)}/decision`, {
          method: 'POST',
          body: JSON.stringify({ verdict }),
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
