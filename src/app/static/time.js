// Times in the reader's zone, named, with a relative form: "23 Nov, 23:30 CET · 5 min ago", and deadlines
// as "in 12 min (23:42 CET)", kept current. The page says the same in UTC without this script.
'use strict';
(() => {
  const UNITS = [
    [86400000, 'd'],
    [3600000, 'h'],
    [60000, 'min'],
  ];
  // The same words as relativeText in src/domain/time-text.ts.
  function relative(ms, now) {
    const delta = ms - now;
    const unit = UNITS.find(([size]) => Math.abs(delta) >= size);
    if (!unit) return 'now';
    const count = Math.floor(Math.abs(delta) / unit[0]);
    return delta > 0 ? `in ${count} ${unit[1]}` : `${count} ${unit[1]} ago`;
  }
  const local = new Intl.DateTimeFormat(undefined, {
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  });
  const clock = new Intl.DateTimeFormat(undefined, {
    hour: '2-digit',
    minute: '2-digit',
    timeZoneName: 'short',
  });

  function render(el, now) {
    const ms = Date.parse(el.dateTime);
    if (Number.isNaN(ms)) return;
    if (!el.dataset.utc) el.dataset.utc = el.textContent;
    el.title = el.dataset.utc;
    const text = el.classList.contains('countdown')
      ? ms <= now
        ? `expired ${relative(ms, now)}`
        : el.classList.contains('short')
          ? relative(ms, now)
          : `${relative(ms, now)} (${clock.format(ms)})`
      : `${local.format(ms)} · ${relative(ms, now)}`;
    if (el.textContent !== text) el.textContent = text;
  }

  function renderAll() {
    const now = Date.now();
    for (const el of document.querySelectorAll('time[datetime]')) render(el, now);
  }

  document.addEventListener('DOMContentLoaded', () => {
    renderAll();
    setInterval(renderAll, 15000);
    // Content swapped in by a live refresh gets the same treatment.
    new MutationObserver(renderAll).observe(document.body, { childList: true, subtree: true });
  });
})();
