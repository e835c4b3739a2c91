// `npm run db:roles` and passwords (issue 22, finding 12): a password reaches Postgres only as a SCRAM-SHA-256
// verifier computed client-side, never as text in CREATE/ALTER ROLE (which log_statement = ddl would log), the
// logins then work with it, and no refusal repeats a password.
import { randomUUID } from 'node:crypto';
import { Client, escapeIdentifier } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';
import { createDatabase } from '../../src/db/pool';
import { setUpDatabaseRoles } from '../../src/db/roles';

let isolated: IsolatedDatabase;
const roles: string[] = [];

beforeAll(async () => {
  isolated = await createIsolatedDatabase(inject('databaseUrl'), 'role_passwords');
});

afterAll(async () => {
  await isolated?.drop();
  const cluster = createDatabase({ connectionString: inject('databaseUrl'), applicationName: 'test roles' });
  try {
    for (const role of roles) await cluster.query(`DROP ROLE IF EXISTS ${escapeIdentifier(role)}`);
  } finally {
    await cluster.close();
  }
});

function login(user: string, password: string): string {
  const url = new URL(isolated.connectionString);
  url.username = user;
  url.password = password;
  return url.toString();
}

/** Every statement text any pg client sends while `work` runs: what the server (and its log) sees. */
async function statementsSentDuring(work: () => Promise<unknown>): Promise<string[]> {
  // Calls through to the real query; it only records what was sent.
  const spy = vi.spyOn(Client.prototype, 'query');
  try {
    await work();
    return spy.mock.calls.map(([first]: unknown[]) => {
      if (typeof first === 'string') return first;
      const text = (first as { text?: unknown } | null)?.text;
      return typeof text === 'string' ? text : '';
    });
  } finally {
    spy.mockRestore();
  }
}

describe('db:roles and passwords', () => {
  it('sends each password only as a SCRAM-SHA-256 verifier, on creating and on changing it; the logins work', async () => {
    const suffix = randomUUID().replace(/-/g, '').slice(0, 10);
    const migrator = `test_migrator_${suffix}`;
    const worker = `test_worker_${suffix}`;
    roles.push(migrator, worker);
    for (const round of ['create', 'alter']) {
      const passwords = [randomUUID().replace(/-/g, ''), randomUUID().replace(/-/g, '')];
      const sent = await statementsSentDuring(() =>
        setUpDatabaseRoles({
          adminUrl: isolated.connectionString,
          migrationUrl: login(migrator, passwords[0]!),
          workerUrl: login(worker, passwords[1]!),
        }),
      );
      const roleStatements = sent.filter((text) => /^(CREATE|ALTER) ROLE "test_/.test(text));
      expect(roleStatements, round).toHaveLength(2);
      for (const text of roleStatements) expect(text).toMatch(/PASSWORD 'SCRAM-SHA-256\$4096:[^']+'/);
      for (const password of passwords) {
        expect(
          sent.filter((text) => text.includes(password)),
          round,
        ).toEqual([]);
      }
      for (const [user, password] of [
        [migrator, passwords[0]!],
        [worker, passwords[1]!],
      ] as const) {
        const client = new Client({ connectionString: login(user, password) });
        await client.connect();
        await client.end();
      }
    }
  });

  it('a refused password is never repeated in the error', async () => {
    const placeholder = 'change-me-4a7f1c9e2b';
    const refused = await setUpDatabaseRoles({
      adminUrl: isolated.connectionString,
      migrationUrl: login('test_placeholder_migrator', placeholder),
      workerUrl: login('test_placeholder_worker', randomUUID().replace(/-/g, '')),
    }).catch((error: unknown) => error as Error);
    expect(refused).toMatchObject({ name: 'RoleSetupError' });
    expect((refused as Error).message).toMatch(/placeholder/);
    expect((refused as Error).message).not.toContain(placeholder);
  });
});
