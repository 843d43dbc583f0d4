/** `apply`, `export` and `simulate`: a workspace's configuration, in the database or through the API. */
import { stringify } from 'yaml';
import { applyConfig, currentConfigVersion, exportConfig, parseConfig } from '../../services/apply-config.ts';
import { type SimulationReport, simulatePolicy } from '../../services/simulate-policy.ts';
import { callService } from '../remote.ts';
import { type Answer, duration, readText, required, UsageError, type Values } from '../usage.ts';
import type { LocalCommand, RemoteCommand } from './command.ts';
import { simulationAnswer } from './simulate-report.ts';
import { workspaceNamed } from './workspace.ts';

function expectVersionOf(values: Values): number | undefined {
  const expected = values['expect-version'];
  if (expected !== undefined && !/^\d{1,15}$/.test(expected))
    throw new UsageError('--expect-version takes the version `approvals export` printed (a whole number)');
  return expected === undefined ? undefined : Number(expected);
}

function applied(
  result: { version: number; items_changed: string[]; webhook_secret?: string },
  file: string,
  where: string,
): Answer {
  const changed = result.items_changed.length;
  const text = `Applied ${file} to ${where}: ${changed === 0 ? 'nothing changed' : `${changed} ${changed === 1 ? 'item' : 'items'} changed`}, configuration version ${result.version}.`;
  // Shown this once, as the service answers it: nothing can show it again.
  const secret = result.webhook_secret
    ? `\nThe webhook's signing secret (shown once; keep it with the receiver):\n${result.webhook_secret}`
    : '';
  return [result, text + secret];
}

/** The file as YAML after a comment naming its version; with --json, the version beside the file. */
function exported(config: object, version: number, where: string): Answer {
  return [
    { workspace: where, version, config },
    `# ${where}, configuration version ${version}: \`approvals apply --expect-version ${version}\` applies this file only if nothing changed since.\n${stringify(config).trimEnd()}`,
  ];
}

export const configCommands: Record<string, LocalCommand> = {
  apply: {
    maxWords: 1,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const file = required(values, 'file');
      const result = await applyConfig(ctx, workspace, parseConfig(readText(file)), {
        expectVersion: expectVersionOf(values),
      });
      return applied(result, file, workspace.slug);
    },
  },
  export: {
    maxWords: 1,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      // The version first, as the app's forms read it: a change landing in between makes a later
      // `apply --expect-version` refuse, never lose it.
      const version = await currentConfigVersion(ctx, workspace);
      return exported(await exportConfig(ctx, workspace), version, workspace.slug);
    },
  },
  simulate: {
    maxWords: 1,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const draft = parseConfig(readText(required(values, 'file')));
      const report = await simulatePolicy(ctx, workspace, draft, {
        sinceMs: duration(values.since ?? '30d'),
      });
      return simulationAnswer(report, values);
    },
  },
};

export const remoteConfigCommands: Record<string, RemoteCommand> = {
  apply: {
    maxWords: 1,
    async run(remote, _words, values) {
      const file = required(values, 'file');
      const expected = expectVersionOf(values);
      const { body } = await callService(remote, 'PUT', 'api/v1/workspace/config', {
        body: readText(file),
        headers: {
          'Content-Type': 'application/yaml',
          ...(expected === undefined ? {} : { 'If-Match': `"${expected}"` }),
        },
      });
      return applied(body as { version: number; items_changed: string[] }, file, remote.url);
    },
  },
  export: {
    maxWords: 1,
    async run(remote) {
      const { body, headers } = await callService(remote, 'GET', 'api/v1/workspace/config');
      // The workspace, as the local command names it, not the service's address.
      const workspace = headers.get('workspace') ?? remote.url;
      return exported(body as object, Number(headers.get('config-version')), workspace);
    },
  },
  simulate: {
    maxWords: 1,
    async run(remote, _words, values) {
      const draft = readText(required(values, 'file'));
      const since = values.since ?? '30d';
      duration(since); // the same usage error as locally
      const { body } = await callService(remote, 'POST', `api/v1/workspace/simulate?since=${since}`, {
        body: draft,
        headers: { 'Content-Type': 'application/yaml' },
      });
      return simulationAnswer(body as SimulationReport, values);
    },
  },
};
