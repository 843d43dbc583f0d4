// Copy buttons beside keys, secrets, tokens and links. Without script the buttons stay hidden and the
// value stays on the page, selectable; with it, one click copies the value (or selects it where the
// clipboard is not available, as on plain http).
'use strict';

function showCopyButtons(root) {
  for (const button of root.querySelectorAll('button[data-copy][hidden]')) button.hidden = false;
}

document.addEventListener('click', async (event) => {
  const button = event.target instanceof Element && event.target.closest('button[data-copy]');
  if (!button) return;
  const value = document.getElementById(button.dataset.copy);
  const status = document.getElementById(`${button.dataset.copy}-copied`);
  if (!value || !status) return;
  try {
    await navigator.clipboard.writeText(value.textContent.trim());
    status.textContent = 'Copied.';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(value);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    status.textContent = 'Selected: press Ctrl+C (⌘C on a Mac) to copy.';
  }
});

document.addEventListener('DOMContentLoaded', () => {
  showCopyButtons(document);
  // Live pages replace their content: new buttons appear with it.
  new MutationObserver(() => showCopyButtons(document)).observe(document.body, {
    childList: true,
    subtree: true,
  });
});
