/**
 * Redirect targets that come from a request (a link's `next`, a form's field, a cookie): only a path
 * of the app may be one, after sign-in or back after a decision. No other origin (`https://…`,
 * `//host`, or `/\host`, which browsers read as `//host`), no other scheme, nothing outside /app.
 */
export function appPath(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 2000 || !/^\/app\/[^/\\]/.test(value)) return null;
  if (/[\\\p{Cc}]/u.test(value)) return null;
  const base = 'http://app.invalid';
  const url = new URL(value, base);
  return url.origin === base && url.pathname.startsWith('/app/') && !url.pathname.startsWith('/app/login')
    ? value
    : null;
}
