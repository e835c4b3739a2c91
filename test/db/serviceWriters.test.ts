// Who order_mail_log's trigger takes for this service (migration 0050, docs/design.md "Who is the service"):
// a login that is, by explicit grant, a member of the service's groups. Any other writer (one that sets the
// old session setting, a superuser, the table's owner) is an outside writer and never moves a row this service
// holds. Each case runs against real Postgres under logins of its own.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as PgClient, escapeIdentifier } from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { readMailLog } from '../../src/db/orderMailLog';
import {
  CASE_STUDY_TABLE_KEPT_AS,
  listMigrationFiles,
  migrate,
  MIGRATIONS_DIRECTORY,
} from '../../src/db/migrator';
import { createDatabase } from '../../src/db/pool';
import { MIGRATION_GROUP_ROLE, setUpDatabaseRoles, WORKER_GROUP_ROLE } from '../../src/db/roles';
import { assertSchemaReady, SchemaNotReadyError } from '../../src/db/schemaReady';
import {
  createOrder,
  createOutsideLogin,
  openLeastPrivilegeDatabase,
  openTestDatabase,
  type OutsideLogin,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
const logins: OutsideLogin[] = [];
const groups: string[] = [];

beforeAll(async () => {
  database = await openTestDatabase('service_writers');
});
afterAll(async () => {
  await database?.close();
  for (const login of logins.reverse()) await login.drop();
  const cluster = createDatabase({ connectionString: inject('databaseUrl'), applicationName: 'test roles' });
  try {
    for (const group of groups) await cluster.query(`DROP ROLE IF EXISTS ${escapeIdentifier(group)}`);
  } finally {
    await cluster.close();
  }
});

/** A login of its own that may write order_mail_log, in none of the service's groups (yet). */
async function login(prefix: string): Promise<OutsideLogin> {
  const made = await createOutsideLogin(database.db, database.connectionString, prefix);
  logins.push(made);
  await database.db.query(`GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${escapeIdentifier(made.user)}`);
  return made;
}

async function connect(as: OutsideLogin): Promise<PgClient> {
  const client = new PgClient({ connectionString: as.connectionString, application_name: 'test writer' });
  await client.connect();
  return client;
}

/** A row this service holds, dispatched: a request may be on the wire. */
async function ourDispatchedRow(): Promise<string> {
  const orderId = await createOrder(database.db);
  await database.db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, dispatched_at)
     VALUES ($1, 'sending', 1, $2, now(), now(), now())`,
    [orderId, `default/${orderId}/run-a`],
  );
  return orderId;
}

/** The case study's record of a failed send, by `as`; the row is checked unchanged by the caller. */
async function recordFailedAs(as: OutsideLogin, orderId: string, setup: string[] = []): Promise<number> {
  const client = await connect(as);
  try {
    for (const statement of setup) await client.query(statement);
    const result = await client.query(
      `UPDATE order_mail_log SET state = 'failed', outcome = 'not_sent' WHERE order_id = $1`,
      [orderId],
    );
    return result.rowCount ?? 0;
  } finally {
    await client.end();
  }
}

async function isServiceRole(user: string): Promise<boolean> {
  const { rows } = await database.db.query<{ service: boolean }>(
    'SELECT order_mail_is_service_role($1) AS service',
    [user],
  );
  return rows[0]!.service;
}

describe('an outside writer never moves a row this service holds', () => {
  it('a login that sets order_mail.writer changes no row: the setting grants nothing', async () => {
    const orderId = await ourDispatchedRow();
    const before = await readMailLog(database.db, orderId);
    const outside = await login('guc_writer');

    const changed = await recordFailedAs(outside, orderId, [
      `SET order_mail.writer = 'order-confirmation-mail'`,
    ]);

    expect(changed).toBe(0);
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    expect(before).toMatchObject({ state: 'sending', claimToken: `default/${orderId}/run-a` });
  });

  it('a superuser that is not a member by grant is an outside writer', async () => {
    const orderId = await ourDispatchedRow();
    const before = await readMailLog(database.db, orderId);
    const dba = await login('dba');
    await database.db.query(`ALTER ROLE ${escapeIdentifier(dba.user)} SUPERUSER`);

    expect(await recordFailedAs(dba, orderId)).toBe(0);
    // The setting that says a session's answer is kept forges nothing: the answer is not where a session may write.
    const forged = await recordFailedAs(dba, orderId, [`SET order_mail.service_session = 'kept'`]).catch(
      () => 0,
    );
    expect(forged).toBe(0);
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    expect(await isServiceRole(dba.user)).toBe(false);
  });

  it("a superuser's answer is asked again in each transaction: granted, it writes as the service; revoked, it does not", async () => {
    const dba = await login('dba_granted');
    await database.db.query(`ALTER ROLE ${escapeIdentifier(dba.user)} SUPERUSER`);
    const client = await connect(dba);
    const fail = (orderId: string) =>
      client.query(`UPDATE order_mail_log SET state = 'failed', outcome = 'not_sent' WHERE order_id = $1`, [
        orderId,
      ]);
    try {
      const first = await ourDispatchedRow();
      expect((await fail(first)).rowCount).toBe(0);
      await database.db.query(`GRANT ${WORKER_GROUP_ROLE} TO ${escapeIdentifier(dba.user)}`);
      const second = await ourDispatchedRow();
      expect((await fail(second)).rowCount).toBe(1);
      await database.db.query(`REVOKE ${WORKER_GROUP_ROLE} FROM ${escapeIdentifier(dba.user)}`);
      const third = await ourDispatchedRow();
      const before = await readMailLog(database.db, third);
      expect((await fail(third)).rowCount).toBe(0);
      expect(await readMailLog(database.db, third)).toEqual(before);
    } finally {
      await client.end();
    }
  });

  it("the table's owner that is not a member by grant is an outside writer", async () => {
    const orderId = await ourDispatchedRow();
    const before = await readMailLog(database.db, orderId);
    const owner = await login('owner');
    const { rows } = await database.db.query<{ owner: string }>(
      `SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = 'order_mail_log'::regclass`,
    );
    await database.db.query(`ALTER TABLE order_mail_log OWNER TO ${escapeIdentifier(owner.user)}`);
    try {
      expect(await recordFailedAs(owner, orderId)).toBe(0);
    } finally {
      await database.db.query(`ALTER TABLE order_mail_log OWNER TO ${escapeIdentifier(rows[0]!.owner)}`);
    }
    expect(await readMailLog(database.db, orderId)).toEqual(before);
  });

  it("an outside writer's claim is an outside claim, whatever setting it carries", async () => {
    const orderId = await createOrder(database.db);
    const outside = await login('guc_claim');
    const client = await connect(outside);
    try {
      await client.query(`SET order_mail.writer = 'order-confirmation-mail'`);
      await client.query(
        `INSERT INTO order_mail_log (order_id, state, attempts, claim_token) VALUES ($1, 'sending', 1, 'default/x/run-1')`,
        [orderId],
      );
    } finally {
      await client.end();
    }
    expect((await readMailLog(database.db, orderId))!.claimToken).toMatch(/^legacy:/);
  });
});

describe('a member of the service groups by explicit grant is this service', () => {
  it('a login in order_mail_worker claims and records as this service', async () => {
    const worker = await login('worker');
    await database.db.query(`GRANT ${WORKER_GROUP_ROLE} TO ${escapeIdentifier(worker.user)}`);
    const db = createDatabase({ connectionString: worker.connectionString, applicationName: 'test worker' });
    try {
      const orderId = await createOrder(database.db);
      const claimToken = `default/${orderId}/run-1`;
      const decision = await claimOrderMailRow(db, {
        orderId,
        claimToken,
        workflowScope: `default/${orderId}/`,
        issuedAt: new Date(),
        policy: 'assume-sent',
        idempotency: null,
        sendTimeoutMs: 8_000,
        recordedBy: 'test',
      });
      expect(decision).toMatchObject({ kind: 'claimed' });
      expect(await readMailLog(db, orderId)).toMatchObject({ state: 'sending', claimToken });
    } finally {
      await db.close();
    }
    expect(await isServiceRole(worker.user)).toBe(true);
  });

  it('membership through nested groups counts, and so does the migration group', async () => {
    const group = `test_nested_${randomUUID().slice(0, 8)}`;
    groups.push(group);
    await database.db.query(`CREATE ROLE ${escapeIdentifier(group)} NOLOGIN`);
    await database.db.query(`GRANT ${WORKER_GROUP_ROLE} TO ${escapeIdentifier(group)}`);
    const nested = await login('nested');
    await database.db.query(`GRANT ${escapeIdentifier(group)} TO ${escapeIdentifier(nested.user)}`);
    const migrator = await login('migrator');
    await database.db.query(`GRANT ${MIGRATION_GROUP_ROLE} TO ${escapeIdentifier(migrator.user)}`);

    for (const member of [nested, migrator]) {
      const orderId = await ourDispatchedRow();
      expect(await recordFailedAs(member, orderId)).toBe(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'failed',
        outcome: 'not_sent',
        claimToken: `default/${orderId}/run-a`,
      });
    }
  });

  it('a grant of ADMIN alone (neither INHERIT nor SET) does not count', async () => {
    const admin = await login('admin_only');
    await database.db.query(
      `GRANT ${WORKER_GROUP_ROLE} TO ${escapeIdentifier(admin.user)} WITH ADMIN TRUE, INHERIT FALSE, SET FALSE`,
    );
    const orderId = await ourDispatchedRow();
    const before = await readMailLog(database.db, orderId);
    expect(await recordFailedAs(admin, orderId)).toBe(0);
    expect(await readMailLog(database.db, orderId)).toEqual(before);
  });
});

describe('the roles npm run db:roles makes', () => {
  it('are the service: the migration login by order_mail_migration, the workers by order_mail_worker', async () => {
    const roles = await openLeastPrivilegeDatabase('service_writers_roles');
    try {
      await migrate(roles.migrationUrl);
      const { rows } = await roles.admin.query<{ migrator: boolean; worker: boolean }>(
        'SELECT order_mail_is_service_role($1) AS migrator, order_mail_is_service_role($2) AS worker',
        [new URL(roles.migrationUrl).username, roles.workerUser],
      );
      expect(rows[0]).toEqual({ migrator: true, worker: true });
    } finally {
      await roles.close();
    }
  });

  it('an earlier build migrated as the admin: db:roles hands over its tables and their functions, and the migration login applies 0050', async () => {
    const roles = await openLeastPrivilegeDatabase('service_writers_upgrade');
    const before = await mkdtemp(join(tmpdir(), 'migrations-before-0050-'));
    try {
      for (const name of (await listMigrationFiles()).filter((file) => file < '0050')) {
        await copyFile(join(MIGRATIONS_DIRECTORY, name), join(before, name));
      }
      await migrate(roles.adminUrl, { directory: before });
      await setUpDatabaseRoles({
        adminUrl: roles.adminUrl,
        migrationUrl: roles.migrationUrl,
        workerUrl: roles.workerUrl,
      });
      const report = await migrate(roles.migrationUrl);
      expect(report.applied).toContain('0050_order_mail_service_writers.sql');
    } finally {
      await rm(before, { recursive: true, force: true });
      await roles.close();
    }
  });
});

describe('start refuses a login the trigger would misjudge', () => {
  it('refuses a worker login that is not a member of order_mail_worker by grant', async () => {
    const stranger = await login('stranger');
    await database.db.query(
      `GRANT SELECT ON order_mail_schema_migrations TO ${escapeIdentifier(stranger.user)}`,
    );
    const db = createDatabase({ connectionString: stranger.connectionString, applicationName: 'test start' });
    try {
      const refused = await assertSchemaReady(db).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SchemaNotReadyError);
      expect((refused as Error).message).toContain(
        `${stranger.user} is not a member of ${WORKER_GROUP_ROLE}`,
      );
    } finally {
      await db.close();
    }
  });

  it("refuses while the adopted table's previous owner is in the service's groups, and starts once it is not", async () => {
    const oldOwner = await login('old_owner');
    await database.db.query(`GRANT ${WORKER_GROUP_ROLE} TO ${escapeIdentifier(oldOwner.user)}`);
    await database.db.query(
      `CREATE TABLE ${CASE_STUDY_TABLE_KEPT_AS} (order_id BIGINT PRIMARY KEY, state TEXT NOT NULL)`,
    );
    try {
      await database.db.query(
        `ALTER TABLE ${CASE_STUDY_TABLE_KEPT_AS} OWNER TO ${escapeIdentifier(oldOwner.user)}`,
      );
      const refused = await assertSchemaReady(database.db).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SchemaNotReadyError);
      expect((refused as Error).message).toContain(`is written by ${oldOwner.user}`);

      await database.db.query(`REVOKE ${WORKER_GROUP_ROLE} FROM ${escapeIdentifier(oldOwner.user)}`);
      await expect(assertSchemaReady(database.db)).resolves.toBeUndefined();
    } finally {
      await database.db.query(`DROP TABLE ${CASE_STUDY_TABLE_KEPT_AS}`);
    }
  });
});
