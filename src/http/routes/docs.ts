/** The user documentation (docs/*.md, rendered) and the OpenAPI document, under /docs. */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { marked } from 'marked';
import type { ServiceContext } from '../../services/context.ts';
import { sendError } from '../../web/errors.ts';
import { PAGE_SECURITY_HEADERS, page } from '../html.ts';
import { openApiDocument } from '../openapi.ts';

const docsDirectory = new URL('../../../docs/', import.meta.url);
/** The packages' READMEs, kept beside what they document, served among the docs: page → folder. */
const PACKAGE_PAGES: Record<string, string> = {
  sdk: 'sdk',
  'python-sdk-readme': 'python',
  'ai-sdk': 'ai-sdk',
  'openai-agents': 'openai-agents',
  langchain: 'langchain',
};
const elsewhere: Record<string, URL> = Object.fromEntries(
  Object.entries(PACKAGE_PAGES).map(([page, folder]) => [
    page,
    new URL(`../../../packages/${folder}/README.md`, import.meta.url),
  ]),
);
const pageOfFolder = new Map(Object.entries(PACKAGE_PAGES).map(([page, folder]) => [folder, page]));

export function docsRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }) {
  app.get('/docs/openapi.json', async () => openApiDocument(ctx.publicUrl));

  // The pages' screenshots: `screenshots/…` in docs/app.md, as the repository shows them too.
  app.get<{ Params: { file: string } }>('/docs/screenshots/:file', async (request, reply) => {
    if (!/^[a-z0-9-]+\.png$/.test(request.params.file)) return sendError(reply, 404, 'not_found');
    let image: Buffer;
    try {
      image = await readFile(new URL(`screenshots/${request.params.file}`, docsDirectory));
    } catch {
      return sendError(reply, 404, 'not_found');
    }
    return reply
      .headers({ 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' })
      .type('image/png')
      .send(image);
  });

  app.get<{ Params: { page?: string } }>('/docs/:page?', async (request, reply) => {
    const name = request.params.page || 'README';
    if (!/^[a-z0-9-]+$|^README$/.test(name)) return sendError(reply, 404, 'not_found');
    let markdown: string;
    try {
      markdown = await readFile(elsewhere[name] ?? new URL(`${name}.md`, docsDirectory), 'utf8');
    } catch {
      return sendError(reply, 404, 'not_found');
    }
    // Links between docs pages are written as `holds.md` in the repository; served, they are `/docs/holds`.
    // A package's README is linked as `../packages/<folder>/README.md` from docs/, `../<folder>/README.md`
    // from another package.
    const html = (await marked.parse(markdown))
      .replace(/href="(?:\.\/)?([a-z0-9-]+)\.md(#[^"]*)?"/g, 'href="/docs/$1$2"')
      .replace(
        /href="\.\.\/(?:packages\/)?([a-z0-9-]+)\/README\.md(#[^"]*)?"/g,
        (link, folder: string, anchor = '') =>
          pageOfFolder.has(folder) ? `href="/docs/${pageOfFolder.get(folder)}${anchor}"` : link,
      );
    const title = markdown.match(/^# (.+)$/m)?.[1] ?? 'Documentation';
    return reply
      .headers({ ...PAGE_SECURITY_HEADERS, 'Cache-Control': 'public, max-age=300' })
      .type('text/html; charset=utf-8')
      .send(
        page(
          title,
          `<nav><a href="/docs">Documentation</a> · <a href="/docs/openapi.json">OpenAPI</a></nav>${html}`,
        ),
      );
  });
}
