/**
 * Issue 24: docs that hold. Every page under /docs is served, and every link and image in it that
 * points into the service resolves (images as images). On main, /docs/app and /docs/reports showed
 * five broken images and three broken links: `screenshots/…` resolved to /docs/screenshots/, which
 * nothing served.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sqlite } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const DOCS = new URL('../docs/', import.meta.url);
/** Every page: each Markdown file of docs/, and the packages' READMEs served among them. */
const PAGES = [
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => (name === 'README.md' ? '/docs' : `/docs/${name.slice(0, -3)}`)),
  '/docs/sdk',
  '/docs/python-sdk-readme',
  '/docs/ai-sdk',
  '/docs/openai-agents',
  '/docs/langchain',
];

describe('the documentation as served', () => {
  let t: TestService;
  before(async () => {
    t = await startTestService(sqlite);
  });
  after(() => t?.close());

  test(`every link and image of the ${PAGES.length} pages under /docs resolves`, async () => {
    const broken: string[] = [];
    const checked = new Map<string, Promise<{ status: number; type: string }>>();
    const fetchOnce = (url: string) => {
      if (!checked.has(url))
        checked.set(
          url,
          fetch(url).then(async (response) => {
            await response.arrayBuffer();
            return { status: response.status, type: response.headers.get('content-type') ?? '' };
          }),
        );
      return checked.get(url)!;
    };
    for (const path of PAGES) {
      const page = await fetch(t.url + path);
      assert.equal(page.status, 200, path);
      const html = await page.text();
      // The page's policy must let the browser show its own images, on http too.
      if (/\ssrc="(?!https?:)/.test(html))
        assert.match(page.headers.get('content-security-policy') ?? '', /img-src 'self'/, path);
      const targets = [...html.matchAll(/\s(href|src)="([^"]+)"/g)].map(([, kind, target]) => ({
        kind: kind!,
        target: target!.replaceAll('&amp;', '&'),
      }));
      for (const { kind, target } of targets) {
        if (/^(mailto:|#)/.test(target)) continue;
        const url = new URL(target, t.url + path);
        // Links to other sites are not ours to check here (and there is no network).
        if (url.origin !== t.url) continue;
        url.hash = '';
        const { status, type } = await fetchOnce(url.toString());
        if (status !== 200) broken.push(`${path}: ${kind} ${target} answers ${status}`);
        else if (kind === 'src' && !type.startsWith('image/'))
          broken.push(`${path}: image ${target} is ${type}`);
      }
    }
    assert.deepEqual(broken, []);
  });
});

/** The contract as given to the project, beside the repository (the session's checkout has it; a clone may not). */
const SPEC = new URL('../../shared/spec/', import.meta.url);

test(
  'docs/interface.md and docs/decisions.md are the contract, word for word',
  { skip: existsSync(SPEC) ? undefined : 'the contract (../shared/spec) is not beside this checkout' },
  () => {
    for (const name of ['interface.md', 'decisions.md'])
      assert.equal(
        readFileSync(new URL(name, DOCS), 'utf8'),
        readFileSync(new URL(name, SPEC), 'utf8'),
        `docs/${name} differs from the contract: copy it again`,
      );
  },
);
