/** The service's facts about itself (migration 046), by name: its public address. */
import type { Sql } from './db.ts';

export async function writeServiceSetting(sql: Sql, name: string, value: string): Promise<void> {
  await sql.run(
    `INSERT INTO service_settings (name, value) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
    [name, value],
  );
}

export async function readServiceSetting(sql: Sql, name: string): Promise<string | undefined> {
  return (await sql.one<{ value: string }>('SELECT value FROM service_settings WHERE name = $1', [name]))
    ?.value;
}
