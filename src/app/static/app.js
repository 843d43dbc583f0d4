// Live updates over server-sent events, the inbox's keyboard and its selection (times are time.js's).
// Pages work without it. Live updates never move what is under the pointer or the focus: new holds
// are announced in a bar, a hold decided elsewhere is marked where it is, a typed comment stays
// (kept per hold in sessionStorage, so a reload to show new holds does not lose it either).
'use strict';

const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

function setCount(count) {
  const badge = document.getElementById('pending-count');
  if (!badge) return;
  badge.textContent = String(count);
  badge.hidden = false;
}

/** Says something in the page's live region (a decision's outcome, why it was not made). */
function say(text) {
  const status = document.getElementById('key-status');
  if (status) status.textContent = text;
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

/** `3 new holds, at least one due sooner than anything listed: show`. */
function arrivalsText(arrived, dueSooner) {
  const holds = `${arrived} new hold${arrived === 1 ? '' : 's'}`;
  if (!dueSooner) return `${holds}: show`;
  return `${holds}, ${arrived === 1 ? '' : 'at least one '}due sooner than anything listed: show`;
}

/** Asks what changed since the page was drawn, and shows it without moving anything. */
async function refresh() {
  const drawn = $('[data-drawn-at]');
  const params = new URLSearchParams();
  if ($('.desk')) {
    for (const [key, value] of new URLSearchParams(location.search)) {
      if (key !== 'hold') params.set(key, value);
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
    news.textContent = arrivalsText(changes.arrived, changes.due_sooner === true);
    news.title = news.textContent;
    news.classList.toggle('due-sooner', changes.due_sooner === true);
    // The open hold stays open when the new ones are shown, with its comment (keepComments).
    const open = new URLSearchParams(location.search).get('hold');
    const shown = new URL(news.href);
    if (open) shown.searchParams.set('hold', open);
    news.href = shown.href;
    news.hidden = false;
  }
  for (const left of changes.left) markLeft(left);
  for (const progress of changes.approvals) markApprovals(progress);
  document.body.dataset.refreshed = String(Date.now());
}

// A comment typed for a hold is kept until its decision is sent, across reloads of the page.
const commentKey = (textarea) => `comment:${textarea.closest('[data-hold]')?.dataset.hold}`;

function keepComments() {
  for (const textarea of $$('form.decide textarea[name="comment"]')) {
    const kept = sessionStorage.getItem(commentKey(textarea));
    if (kept && textarea.value === '') textarea.value = kept;
    textarea.addEventListener('input', () => sessionStorage.setItem(commentKey(textarea), textarea.value));
    textarea.form.addEventListener('submit', () => sessionStorage.removeItem(commentKey(textarea)));
  }
}

// The keyboard: shortcuts act on the focused line, or on the open hold when no line has the focus.
// They can be turned off (WCAG 2.1.4), and never fire while typing or with a modifier key.
const SHORTCUTS = 'shortcuts';
const shortcutsOn = () => localStorage.getItem(SHORTCUTS) !== 'off';

function showShortcutsSetting() {
  const toggle = document.getElementById('shortcuts');
  if (toggle) toggle.checked = shortcutsOn();
}

const lines = () => $$('ol.lines > li.line');
const focusedLine = () => document.activeElement?.closest('ol.lines > li.line') ?? null;

function focusLine(line) {
  const link = $(':scope > a', line);
  link.focus();
  link.scrollIntoView({ block: 'nearest' });
}

// Where the list's page changes, the next page says which line to focus.
const FOCUS_ON_LOAD = 'inbox-focus';

// Lines decided in place on this page: the holds after them have moved up into it on the server.
let leftHere = 0;

/**
 * j and k move the focus along the list, on to the next or previous page past its ends. Past the end
 * of a page that lines left, the same page again (its later holds moved up into it), on the first
 * line not seen yet, so no hold is skipped.
 */
function move(step) {
  const all = lines();
  const onward = step > 0 && leftHere > 0;
  if (all.length === 0 && !onward) return;
  const focused = all.indexOf(focusedLine());
  const from = focused >= 0 ? focused : all.findIndex((line) => line.classList.contains('selected'));
  const to = from < 0 ? 0 : from + step;
  if (to < all.length && to >= 0) return focusLine(all[to]);
  const page = $(`.pager a[rel="${step > 0 ? 'next' : 'prev'}"]`);
  if (onward) {
    const same = new URL(location.href);
    same.searchParams.delete('hold');
    sessionStorage.setItem(FOCUS_ON_LOAD, String(all.length));
    location.assign(same.href);
  } else if (page) {
    sessionStorage.setItem(FOCUS_ON_LOAD, step > 0 ? 'first' : 'last');
    location.assign(page.href);
  } else focusLine(all[Math.min(all.length - 1, Math.max(0, to))]);
}

/** The hold a key acts on: the focused line's, else the open one (the panel or the hold's page). */
function target() {
  const line = focusedLine();
  const id = line?.dataset.hold ?? $('article.hold[data-hold]')?.dataset.hold;
  if (!id) return null;
  const panel = $(`article.hold[data-hold="${id}"]`);
  const form = panel && $('form.decide', panel);
  if (line) {
    const agent = $('.agent', line)?.textContent.trim();
    const values = line.dataset.values ?? $('.summary', line)?.textContent.trim() ?? '';
    const tool = $('.tool', line)?.textContent.trim() ?? '';
    return { id, line, form, action: values ? `${tool} · ${values}` : tool, agent };
  }
  if (!form) return null;
  return { id, line: null, form, action: form.dataset.action, agent: form.dataset.agent };
}

/** Asks before deciding from the keyboard, naming the hold it acts on; decides it on yes. */
function confirmDecision(verdict) {
  const hold = target();
  const dialog = document.getElementById('confirm');
  // No Approve button on a hold too large to show whole: the key does nothing either.
  if (!hold || !dialog || (hold.form && !$(`button[value="${verdict}"]`, hold.form))) return;
  if (!hold.form && !hold.line.matches('[data-waiting]')) return;
  // A line shows its action whole only when it fits: otherwise it is approved on the hold, seen in full.
  if (verdict === 'approve' && !hold.form && !hold.line.matches('[data-complete]')) {
    say('Open the hold to see it in full before approving it.');
    return location.assign($(':scope > a', hold.line).href);
  }
  const word = verdict === 'approve' ? 'Approve' : 'Reject';
  $('#confirm-title', dialog).textContent = `${word} this action?`;
  $('.confirm-action code', dialog).textContent = hold.action;
  $('.confirm-agent', dialog).textContent = hold.agent ? `Requested by ${hold.agent}` : '';
  const yes = $('.confirm-yes', dialog);
  yes.textContent = word;
  yes.className = `confirm-yes ${verdict}`;
  dialog.returnValue = '';
  dialog.addEventListener(
    'close',
    () => {
      if (dialog.returnValue === 'yes') decide(hold, verdict).catch(() => say('Not decided: no answer.'));
    },
    { once: true },
  );
  dialog.showModal();
  yes.focus();
}

const csrf = () => $('input[name="_csrf"]')?.value ?? '';

/** Sends a form to the app and reads its JSON answer (`{ error, message }` when refused). */
async function post(path, fields) {
  const answer = await fetch(path, {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf(), back: location.pathname + location.search, ...fields }),
    credentials: 'same-origin',
  });
  return { ok: answer.ok, body: await answer.json().catch(() => ({})) };
}

/** Decides without loading a page; an approval that must be signed with a passkey goes to its page. */
async function decide(hold, verdict) {
  const signed = verdict === 'approve' && hold.form && $('input[data-passkey-challenge]', hold.form);
  if (signed) return hold.form.requestSubmit($('button[value="approve"]', hold.form));
  const textarea = hold.form && $('textarea[name="comment"]', hold.form);
  const next = hold.line?.nextElementSibling?.dataset.hold ?? '';
  const { ok, body } = await post(`/app/holds/${hold.id}/decide`, {
    verdict,
    comment: textarea?.value ?? '',
    next,
  });
  if (!ok) {
    if (body.error === 'passkey_required') return location.assign(`/app/holds/${hold.id}`);
    return say(body.message ?? 'Not decided.');
  }
  if (textarea) sessionStorage.removeItem(commentKey(textarea));
  say(`${body.notice} ${hold.action}`);
  markLeft({ id: hold.id, note: body.notice });
  // Decided meanwhile by someone else, its line stays where it is, marked as a live update marks it.
  if (hold.line && body.outcome !== 'closed' && body.outcome !== 'already_decided') leaveList(hold.line);
  refresh().catch(() => {});
}

/** A line decided here leaves the list; the focus goes to the next line (or the one before). */
function leaveList(line) {
  const neighbour = line.nextElementSibling ?? line.previousElementSibling;
  const hadFocus = line.contains(document.activeElement);
  line.remove();
  leftHere += 1;
  const matching = $('#queue-title .badge');
  if (matching && /^\d+$/.test(matching.textContent)) matching.textContent = String(matching.textContent - 1);
  if (hadFocus && neighbour) focusLine(neighbour);
  showSelection();
}

/** A line says who is on it, as the page draws a claimed line. */
function showClaim(line, name) {
  line.dataset.claimedBy = name;
  let note = $('.claimed', line);
  if (!note) {
    note = document.createElement('span');
    note.className = 'claimed';
    $(':scope > a', line).append(note);
  }
  note.textContent = `${name} is on it`;
}

/** `m`: "I'm on it" for the focused or open hold, shown to the other approvers. */
async function claim() {
  const hold = target();
  if (!hold) return;
  const { ok, body } = await post(`/app/holds/${hold.id}/claim`, {});
  if (!ok) return say(body.claimed ? `${body.claimed.name} is on it.` : (body.message ?? 'Not claimed.'));
  if (hold.line) showClaim(hold.line, body.claimed.name);
  say(`${body.claimed.name} is on it: ${hold.action}`);
}

/** `c`: the comment box of the focused or open hold; a line not open is opened first. */
function comment() {
  const hold = target();
  const textarea = hold?.form && $('textarea[name="comment"]', hold.form);
  if (textarea) return textarea.focus();
  if (!hold?.line) return;
  sessionStorage.setItem(FOCUS_ON_LOAD, 'comment');
  location.assign($(':scope > a', hold.line).href);
}

// Selection for bulk decisions: x toggles the focused line, shift-click selects a range.
let lastPicked = null;

function showSelection() {
  const bar = document.getElementById('bulk');
  if (!bar) return;
  const count = $$('input.pick[form="bulk"]:checked').length;
  let shown = $('.selected-count', bar);
  if (!shown) {
    shown = document.createElement('span');
    shown.className = 'selected-count';
    shown.setAttribute('role', 'status');
    bar.prepend(shown);
  }
  shown.textContent = count > 0 ? `${count} selected` : '';
  for (const button of $$('button[name="verdict"]', bar)) button.disabled = count === 0;
}

function pickRange(event) {
  const box = event.target;
  if (!box.matches?.('input.pick')) return;
  const boxes = $$('input.pick');
  if (event.shiftKey && lastPicked && boxes.includes(lastPicked)) {
    const [from, to] = [boxes.indexOf(lastPicked), boxes.indexOf(box)].sort((a, b) => a - b);
    for (const other of boxes.slice(from, to + 1)) other.checked = box.checked;
  }
  lastPicked = box;
  showSelection();
}

function togglePick() {
  const box = focusedLine()?.querySelector('input.pick');
  if (!box) return;
  box.checked = !box.checked;
  lastPicked = box;
  showSelection();
}

/** `/`: the search field, unfolded first where a phone folds the filters away. */
function search() {
  const field = $('.filters input[type="search"]');
  const fold = field?.closest('details');
  if (fold) fold.open = true;
  field?.focus();
}

const KEYS = {
  j: () => move(1),
  k: () => move(-1),
  a: () => confirmDecision('approve'),
  r: () => confirmDecision('reject'),
  c: comment,
  m: () => claim().catch(() => say('Not claimed: no answer.')),
  x: togglePick,
  '/': search,
  '?': () => document.getElementById('keys')?.showModal(),
};

function onKey(event) {
  if (!shortcutsOn() || event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const typing = 'input:not([type="checkbox"], [type="radio"]), textarea, select, [contenteditable]';
  if (event.target.closest(typing) || $('dialog[open]')) return;
  const action = KEYS[event.key];
  if (!action) return;
  event.preventDefault();
  action();
}

/** Where the focus goes on a page the keyboard opened: the first or last line, or a comment box. */
function focusOnLoad() {
  const wanted = sessionStorage.getItem(FOCUS_ON_LOAD);
  sessionStorage.removeItem(FOCUS_ON_LOAD);
  const all = lines();
  if (wanted === 'first' && all.length) return focusLine(all[0]);
  if (wanted === 'last' && all.length) return focusLine(all.at(-1));
  if (/^\d+$/.test(wanted ?? '') && all.length)
    return focusLine(all[Math.min(Number(wanted), all.length - 1)]);
  if (wanted === 'comment') return $('article.hold form.decide textarea')?.focus();
  // A hold opened from the list keeps the list's place: j and k go on from it.
  if ($('.desk[data-selection="chosen"]')) $('.lines > li.selected > a')?.focus();
}

function keyboard() {
  document.addEventListener('keydown', onKey);
  $('.keys-help')?.addEventListener('click', () => document.getElementById('keys')?.showModal());
  document.getElementById('shortcuts')?.addEventListener('change', (event) => {
    localStorage.setItem(SHORTCUTS, event.target.checked ? 'on' : 'off');
  });
  showShortcutsSetting();
  document.addEventListener('click', pickRange);
  showSelection();
  focusOnLoad();
}

document.addEventListener('DOMContentLoaded', () => {
  keepComments();
  if ($('.desk, .hold-page')) keyboard();
  if (document.getElementById('pending-count')?.hidden) refresh().catch(() => {});
  if ($('#main')?.dataset.live !== 'on' || !window.EventSource) return;
  const events = new EventSource('/app/events');
  events.addEventListener('holds', () => refresh().catch(() => {}));
  events.addEventListener('open', () => {
    document.body.dataset.live = 'connected';
  });
});
