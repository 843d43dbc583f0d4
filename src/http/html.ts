/** The few server-rendered pages share this: escaping and a strict shell. */

import { escapeHtml } from '../markup/html.ts';

/** Pages carry no script; images only over https (workspace logos). */
export const PAGE_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

export function page(title: string, body: string, accent = '#0a6e5c'): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
:root{--accent:${escapeHtml(accent)}}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232a;background:#f5f6f8;margin:0}
main{max-width:44rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 3px #0002;border-top:6px solid var(--accent)}
h1{font-size:1.4rem;margin:.2rem 0 1rem}
header{display:flex;align-items:center;gap:.8rem;color:#555}
header img{max-height:40px;max-width:160px}
.status{display:inline-block;padding:.25rem .8rem;border-radius:999px;font-weight:600;background:#eef;color:#223}
.status.approved,.status.auto_allowed,.status.executed{background:#e3f6ec;color:#11663d}
.status.rejected,.status.failed{background:#fde8e8;color:#9b1c1c}
.status.expired{background:#eee;color:#555}
.status.pending{background:#fff4d6;color:#7a5200}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1.2rem}dt{color:#666}dd{margin:0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f3f4f6;border-radius:4px}
pre{padding:.8rem;overflow:auto}code{padding:.1rem .3rem}pre code{padding:0}
a{color:var(--accent)}
</style></head>
<body><main>${body}</main></body></html>`;
}
