// Times in one zone, named, with a relative form: "23 Nov, 23:30 CET · 5 min ago", and deadlines as
// "in 1 h 59 min (23:42 CET)", kept current. The zone is the reader's saved time zone when the page
// names one (`data-time-zone` on <body>), else the browser's. The page says the same in UTC without this
// script.
'use strict';
(() => {
  // The same words as relativeText in src/domain/time-text.ts: cut down to the minute, never rounded up.
  function span(minutes) {
    if (minutes < 60) return `${minutes} min`;
    const hours = Math.floor(minutes / 60);
    if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
    return `${Math.floor(hours / 24)} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
  }

  function relative(ms, now) {
    const minutes = Math.floor(Math.abs(ms - now) / 60000);
    if (minutes === 0) return 'now';
    return ms > now ? `in ${span(minutes)}` : `${span(minutes)} ago`;
  }

  /** The page's formats, in its zone; a zone this browser does not know leaves the browser's own. */
  function formats(zone) {
    const make = (timeZone) => ({
      local: new Intl.DateTimeFormat(undefined, {
        day: 'numeric',
        month: 'short',
        hour: '2-digit',
        minute: '2-digit',
        timeZoneName: 'short',
        timeZone,
      }),
      clock: new Intl.DateTimeFormat(undefined, {
        hour: '2-digit',
        minute: '2-digit',
        timeZoneName: 'short',
        timeZone,
      }),
    });
    try {
      return make(zone || undefined);
    } catch {
      return make(undefined);
    }
  }

  let format;

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
          : `${relative(ms, now)} (${format.clock.format(ms)})`
      : `${format.local.format(ms)} · ${relative(ms, now)}`;
    if (el.textContent !== text) el.textContent = text;
  }

  function renderAll() {
    const now = Date.now();
    for (const el of document.querySelectorAll('time[datetime]')) render(el, now);
  }

  document.addEventListener('DOMContentLoaded', () => {
    format = formats(document.body.dataset.timeZone);
    renderAll();
    setInterval(renderAll, 15000);
    // Content swapped in by a live refresh gets the same treatment.
    new MutationObserver(renderAll).observe(document.body, { childList: true, subtree: true });
  });
})();
