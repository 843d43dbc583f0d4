/**
 * Log lines for a person at a terminal (LOG_FORMAT=pretty, or stdout is one): the time, the level and
 * the message, then the other fields as name=value. Elsewhere the log stays JSON, one object a line.
 */

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** What every line has, or says in its own place. */
const SHOWN_APART = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

/** One JSON log line as a person reads it; a line that is not JSON as it is. */
export function prettyLine(line: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const time = new Date(Number(record.time)).toISOString().slice(11, 23);
  const level = LEVELS[Number(record.level)] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([name]) => !SHOWN_APART.has(name))
    .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return `${time} ${level.padEnd(5)} ${String(record.msg ?? '')}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}`;
}

/** A destination for the logger (pino writes each record as one JSON line) that prints it pretty. */
export const prettyLog = (out: { write(text: string): unknown }) => ({
  write: (line: string) => out.write(`${prettyLine(line.trimEnd())}\n`),
});
