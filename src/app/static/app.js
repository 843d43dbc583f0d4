// The app's only script: local times, deadline countdowns, and live updates over server-sent events.
// Pages work without it; it only keeps them current.
'use strict';

function renderTimes(root) {
  for (const el of root.querySelectorAll('time[datetime]:not(.countdown)')) {
    el.title = el.dateTime;
    el.textContent = new Date(el.dateTime).toLocaleString();
  }
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll('time.countdown')) {
    const left = Math.floor((Date.parse(el.dateTime) - now) / 1000);
    if (left <= 0) {
      el.textContent = 'expired';
      continue;
    }
    const d = Math.floor(left / 86400);
    const h = Math.floor((left % 86400) / 3600);
    const m = Math.floor((left % 3600) / 60);
    const s = left % 60;
    el.textContent = `${d ? `${d}d ` : ''}${d || h ? `${h}h ` : ''}${m}m ${s}s left`;
  }
}

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
    renderTimes(document);
    tick();
  }
  document.body.dataset.refreshed = String(Date.now());
}

document.addEventListener('DOMContentLoaded', () => {
  renderTimes(document);
  tick();
  setInterval(tick, 1000);
  if (document.getElementById('main')?.dataset.live !== 'on' || !window.EventSource) return;
  const events = new EventSource('/app/events');
  events.addEventListener('holds', () => refresh().catch(() => {}));
  events.addEventListener('open', () => {
    document.body.dataset.live = 'connected';
  });
});
