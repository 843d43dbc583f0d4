/**
 * The CLI against a deployed service: with APPROVALS_URL and APPROVALS_KEY (or --url, --key), `apply`,
 * `export`, `simulate`, `holds list|show` and `workspace freeze|unfreeze` call the Core API's admin routes with an admin-scope key
 * instead of opening the database. Answers and errors are the same as the local commands'.
 */
import { ServiceError } from '../services/errors.ts';

export interface Remote {
  url: string;
  key: string;
}

interface ErrorBody {
  error?: string;
  detail?: string;
  referenceId?: string;
  issues?: { field: string; message: string; line?: number }[];
}

/** One call; an error answer becomes the error the local command would have thrown. */
export async function callService(
  remote: Remote,
  method: 'GET' | 'PUT' | 'POST',
  path: string,
  options: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ body: unknown; headers: Headers }> {
  let response: Response;
  try {
    response = await fetch(new URL(path, remote.url.replace(/\/?$/, '/')), {
      method,
      headers: { Authorization: `Bearer ${remote.key}`, Accept: 'application/json', ...options.headers },
      body: options.body,
      signal: AbortSignal.timeout(120_000),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    throw new Error(`cannot reach ${remote.url}${cause ? ` (${cause})` : ''}`, { cause: error });
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    throw new Error(
      `${remote.url} answered HTTP ${response.status} with something other than JSON: is APPROVALS_URL the service's address?`,
    );
  }
  if (response.ok) return { body, headers: response.headers };
  const error = (body ?? {}) as ErrorBody;
  switch (response.status) {
    case 401:
      throw new Error(`${remote.url} refused the key (401 unauthorized): it is unknown, revoked or mistyped`);
    case 403:
      throw new Error(
        'this key is not an admin-scope key (403 forbidden): these commands need one, made with `approvals keys create … --scope admin`',
      );
    case 404:
      throw new ServiceError('not_found', error.detail ?? 'not found');
    case 409:
      throw new ServiceError('conflict', error.detail ?? 'the configuration changed meanwhile');
    case 422: {
      const issues = error.issues ?? [];
      const text = issues
        .map((i) => `${i.line ? `line ${i.line}: ` : ''}${i.field}: ${i.message}`)
        .join('; ');
      throw new ServiceError('validation_failed', text || (error.detail ?? 'invalid'), issues);
    }
    case 429:
      throw new Error(
        `rate limited by ${remote.url}: try again in ${response.headers.get('retry-after') ?? 'a'} s`,
      );
    default:
      throw new Error(
        `${remote.url} answered HTTP ${response.status} (${error.error ?? 'no error code'}${error.referenceId ? `, reference ${error.referenceId} in the service's log` : ''})`,
      );
  }
}

/** The slug of the key's workspace, as the service names it beside the workspace file. */
export async function keyWorkspace(remote: Remote): Promise<string> {
  const { headers } = await callService(remote, 'GET', 'api/v1/workspace/config');
  return headers.get('workspace') ?? '';
}
