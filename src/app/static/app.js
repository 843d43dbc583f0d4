// Live updates over server-sent events, and the inbox's keyboard (times are time.js's).
// Pages work without it. Live updates never move what is under the pointer or the focus: new holds
// are announced in a bar, a hold decided elsewhere is marked where it is, a typed comment stays.
'use strict';

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

function setCount(count) {
  const badge = document.getElementById('pending-count');
  if (!badge) return;
  badge.textContent = String(count);
  badge.hidden = false;
}

/** Marks every element of a hold that stopped waiting for the reader, where it is. */
function markLeft(left) {
  for (const el of $$(`[data-waiting][data-hold="${left.id}"]`)) {
    el.classList.add('left');
    el.removeAttribute('data-waiting');
    const note = $('.left-note', el);
    if (note) {
      note.textContent = left.note;
      note.hidden = false;
    }
    // The buttons go, the comment typed so far stays readable.
    for (const button of $$('form.decide button', el)) button.disabled = true;
  }
}

function markApprovals(progress) {
  const text = `${progress.received} of ${progress.required}`;
  for (const el of $$(`[data-hold="${progress.id}"]`)) {
    const line = $('.approvals', el);
    if (line) line.textContent = progress.names ? `${text} · ${progress.names}` : text;
    const count = $('.four-eyes .count', el);
    if (count) count.textContent = text;
  }
}

/** Asks what changed since the page was drawn, and shows it without moving anything. */
async function refresh() {
  const drawn = $('[data-drawn-at]');
  const params = new URLSearchParams();
  if ($('.desk')) {
    for (const [key, value] of new URLSearchParams(location.search)) {
      if (!['after', 'before', 'hold'].includes(key)) params.set(key, value);
    }
  }
  params.set('shown', [...new Set($$('[data-waiting]').map((el) => el.dataset.hold))].join(','));
  params.set('since', drawn ? drawn.dataset.drawnAt : '0');
  const answer = await fetch(`/app/inbox/changes?${params}`, { credentials: 'same-origin' });
  if (!answer.ok) return;
  const changes = await answer.json();
  setCount(changes.waiting);
  const news = $('.arrivals a');
  if (news && changes.arrived > 0) {
    news.textContent = `${changes.arrived} new hold${changes.arrived === 1 ? '' : 's'}: show`;
    news.hidden = false;
  }
  for (const left of changes.left) markLeft(left);
  for (const progress of changes.approvals) markApprovals(progress);
  document.body.dataset.refreshed = String(Date.now());
}

/** Asks before deciding from the keyboard, naming the action; submits the form's button on yes. */
function confirmDecision(verdict) {
  const form = $('article.hold form.decide');
  const dialog = document.getElementById('confirm');
  // No Approve button on a hold too large to show whole: the key does nothing either.
  const button = form && $(`button[value="${verdict}"]`, form);
  if (!button || !dialog) return;
  const word = verdict === 'approve' ? 'Approve' : 'Reject';
  $('#confirm-title', dialog).textContent = `${word} this action?`;
  $('.confirm-action code', dialog).textContent = form.dataset.action;
  $('.confirm-agent', dialog).textContent = `Requested by ${form.dataset.agent}`;
  const yes = $('.confirm-yes', dialog);
  yes.textContent = word;
  yes.className = `confirm-yes ${verdict}`;
  dialog.returnValue = '';
  dialog.addEventListener(
    'close',
    () => {
      if (dialog.returnValue === 'yes') form.requestSubmit(button);
    },
    { once: true },
  );
  dialog.showModal();
  yes.focus();
}

/** j and k move the focus along the list; Enter then opens the focused hold (it is a link). */
function move(step) {
  const links = $$('.lines > li > a');
  if (links.length === 0) return;
  const focused = links.indexOf(document.activeElement);
  const from =
    focused >= 0 ? focused : links.findIndex((a) => a.closest('li').classList.contains('selected'));
  const to = Math.min(links.length - 1, Math.max(0, from < 0 ? 0 : from + step));
  links[to].focus();
  links[to].scrollIntoView({ block: 'nearest' });
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest('input, textarea, select, [contenteditable]') || $('dialog[open]')) return;
  const keys = {
    j: () => move(1),
    k: () => move(-1),
    a: () => confirmDecision('approve'),
    r: () => confirmDecision('reject'),
    c: () => $('article.hold form.decide textarea')?.focus(),
    '?': () => document.getElementById('keys')?.showModal(),
  };
  const action = keys[event.key];
  if (!action) return;
  event.preventDefault();
  action();
}

document.addEventListener('DOMContentLoaded', () => {
  if ($('.desk, .hold-page')) {
    document.addEventListener('keydown', onKey);
    $('.keys-help')?.addEventListener('click', () => document.getElementById('keys')?.showModal());
    // A hold opened from the list keeps the list's place: j and k go on from it.
    if ($('.desk[data-selection="chosen"]')) $('.lines > li.selected > a')?.focus({ preventScroll: false });
  }
  if (document.getElementById('pending-count')?.hidden) refresh().catch(() => {});
  if ($('#main')?.dataset.live !== 'on' || !window.EventSource) return;
  const events = new EventSource('/app/events');
  events.addEventListener('holds', () => refresh().catch(() => {}));
  events.addEventListener('open', () => {
    document.body.dataset.live = 'connected';
  });
});
