// Live updates over server-sent events (times are time.js's).
// Pages work without it; it only keeps them current.
'use strict';

/** Reload the page's content in place, unless the reader is typing in it. */
async function refresh() {
  const typing = document.activeElement && /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
  const fresh = new DOMParser().parseFromString(
    await (await fetch(location.href, { credentials: 'same-origin' })).text(),
    'text/html',
  );
  const count = fresh.getElementById('pending-count');
  const current = document.getElementById('pending-count');
  if (count && current) current.textContent = count.textContent;
  const main = fresh.getElementById('main');
  if (main && !typing) {
    document.getElementById('main').replaceChildren(...main.childNodes);
  }
  document.body.dataset.refreshed = String(Date.now());
}

document.addEventListener('DOMContentLoaded', () => {
  if (document.getElementById('main')?.dataset.live !== 'on' || !window.EventSource) return;
  const events = new EventSource('/app/events');
  events.addEventListener('holds', () => refresh().catch(() => {}));
  events.addEventListener('open', () => {
    document.body.dataset.live = 'connected';
  });
});
