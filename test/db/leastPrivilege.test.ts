// Least privilege on a real Postgres (docs/production.md): the roles `npm run db:roles` makes, the schema
// `npm run db:migrate` makes as its own role, and what the workers' role may and may not do there. The audit
// tables refuse UPDATE and DELETE by grants AND by their trigger (a grant made by mistake opens nothing).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator';
import { checkOrderContract } from '../../src/db/orderContract';
import { createDatabase, type Database } from '../../src/db/pool';
import { assertSchemaReady, SchemaNotReadyError } from '../../src/db/schemaReady';
import { advanceSweepProgress, sweepResumesFrom } from '../../src/db/sweepProgress';
import { listSendEvents, storeDelivery } from '../../src/webhooks/providerEvents';
import { RoleSetupError, setUpDatabaseRoles, weakPasswordProblem } from '../../src/db/roles';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnvFile } from '../../dev/stack/stackSettings';
import {
  createOrder,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
} from '../support/testKit';

let database: LeastPrivilegeDatabase;
let worker: Database;
let operator: Database;

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('least_privilege');
  worker = createDatabase({ connectionString: database.workerUrl, applicationName: 'test worker role' });
  operator = createDatabase({ connectionString: database.operatorUrl, applicationName: 'test operator' });
});
afterAll(async () => {
  await operator?.close();
  await worker?.close();
  await database?.close();
});

/** The SQLSTATE a statement failed with, or 'ok'. */
async function outcome(db: Database, statement: string, params: unknown[] = []): Promise<string> {
  try {
    await db.query(statement, params);
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code ?? error);
  }
}

const PERMISSION_DENIED = '42501';

describe('the workers role', () => {
  it('refuses to start a worker before the migrations ran, and says what to run', async () => {
    const refused = await assertSchemaReady(worker).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SchemaNotReadyError);
    expect((refused as Error).message).toContain('npm run db:migrate');
  });

  it('may not run the migrations itself (no DDL)', async () => {
    await expect(migrate(database.workerUrl)).rejects.toThrow(/permission denied/);
  });

  it('after the migration role migrated: reads orders, writes the mail tables, and nothing more', async () => {
    const report = await migrate(database.migrationUrl);
    expect(report.applied.length).toBeGreaterThan(0);
    await spreadOrderIds(database.admin);
    await assertSchemaReady(worker);
    const orderId = await createOrder(database.admin);
    const token = `default/${orderId}/run-1`;

    // The orders through the contract's views (0063), with their owner's rights; the shop's tables not at all.
    expect(
      await outcome(worker, 'SELECT * FROM order_mail_source.orders_for_mail WHERE order_id = $1', [orderId]),
    ).toBe('ok');
    expect(
      await outcome(worker, 'SELECT * FROM order_mail_source.order_items_for_mail WHERE order_id = $1', [
        orderId,
      ]),
    ).toBe('ok');
    expect(await outcome(worker, 'SELECT id FROM orders WHERE id = $1', [orderId])).toBe(PERMISSION_DENIED);
    expect(await outcome(worker, 'SELECT order_id FROM order_items WHERE order_id = $1', [orderId])).toBe(
      PERMISSION_DENIED,
    );
    // A column the shop adds beside them is not the workers' to read: the view does not name it.
    await database.admin.query('ALTER TABLE orders ADD COLUMN phone TEXT');
    expect(await outcome(worker, 'SELECT phone FROM orders WHERE id = $1', [orderId])).toBe(
      PERMISSION_DENIED,
    );
    await assertSchemaReady(worker);
    await checkOrderContract(worker);
    expect(await outcome(worker, `UPDATE orders SET customer_name = 'x' WHERE id = $1`, [orderId])).toBe(
      PERMISSION_DENIED,
    );
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at)
         VALUES ($1, 'sending', 1, $2, now())`,
        [orderId, token],
      ),
    ).toBe('ok');
    expect(
      await outcome(worker, `UPDATE order_mail_log SET dispatched_at = now() WHERE order_id = $1`, [orderId]),
    ).toBe('ok');
    expect(await outcome(worker, 'DELETE FROM order_mail_log WHERE order_id = $1', [orderId])).toBe(
      PERMISSION_DENIED,
    );
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                          recorded_by)
         VALUES ($1, 1, $2, 0, now(), 'failed', 'not_sent', 'test')`,
        [orderId, token],
      ),
    ).toBe('ok');
    // Operator acts are the operators' own (0057): a taken-over worker writes none in anyone's name.
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_operator_acts (order_id, act, operator, reason) VALUES ($1, 'retry', 'x', 'y')`,
        [orderId],
      ),
    ).toBe(PERMISSION_DENIED);
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_late_answers (order_id, attempt, outcome, recorded_by) VALUES ($1, 1, 'accepted', 'x')`,
        [orderId],
      ),
    ).toBe('ok');

    // The audit tables: no UPDATE, no DELETE.
    for (const table of ['order_mail_attempts', 'order_mail_operator_acts', 'order_mail_late_answers']) {
      expect(
        await outcome(worker, `UPDATE ${table} SET order_id = order_id WHERE order_id = $1`, [orderId]),
        table,
      ).toBe(PERMISSION_DENIED);
      expect(await outcome(worker, `DELETE FROM ${table} WHERE order_id = $1`, [orderId]), table).toBe(
        PERMISSION_DENIED,
      );
    }
    // No DDL.
    expect(await outcome(worker, 'CREATE TABLE scratch (id int)')).toBe(PERMISSION_DENIED);
    expect(await outcome(worker, 'ALTER TABLE order_mail_log ADD COLUMN scratch int')).toBe(
      PERMISSION_DENIED,
    );
    expect(await outcome(worker, 'DROP TABLE order_mail_attempts')).toBe(PERMISSION_DENIED);
    expect(await outcome(worker, 'ALTER TABLE order_mail_attempts DISABLE TRIGGER USER')).toBe(
      PERMISSION_DENIED,
    );
  });

  it('runs what the sweep and the verification do, with the worker role', async () => {
    // The tables later migrations made (provider events, the sweep's mark) are the workers' too: a
    // least-privilege worker that could not read the events would send every unknown outcome to the policy,
    // and a sweep that could not move its mark would fail at its end. The events are stored by the webhook
    // receiver, under its own role (here the owner stands in for it).
    const orderId = await createOrder(database.admin);
    const stored = await storeDelivery(
      database.admin,
      'sendgrid',
      {
        token: `least-privilege-${orderId}`,
        signedAt: new Date(),
        events: [
          {
            provider: 'sendgrid',
            providerEventId: `evt-${orderId}`,
            orderId,
            sendKey: `order-confirmation/${orderId}/0`,
            providerMessageId: 'sg-1',
            eventType: 'accepted',
            occurredAt: new Date(),
            reason: null,
          },
        ],
        skipped: {},
      },
      new Date(Date.now() - 60_000),
    );
    expect(stored).toEqual({ kind: 'stored', newEvents: 1, knownEvents: 0 });
    const [evidence] = await listSendEvents(worker, {
      orderId,
      sendKey: `order-confirmation/${orderId}/0`,
      provider: 'sendgrid',
    });
    expect(evidence?.providerMessageId).toBe('sg-1');
    // A provider event is what the provider said: never changed, by the workers or anyone.
    expect(
      await outcome(worker, `UPDATE order_mail_provider_events SET reason = 'x' WHERE order_id = $1`, [
        orderId,
      ]),
    ).toBe(PERMISSION_DENIED);
    expect(
      await outcome(worker, `DELETE FROM order_mail_provider_events WHERE order_id = $1`, [orderId]),
    ).toBe(PERMISSION_DENIED);
    // Storing events and replay tokens is the receiver's alone (migration 0032): a worker taken over can neither
    // plant a provider event nor forget a token to reopen a replay, nor read the tokens.
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_provider_events (provider, provider_event_id, order_id, event_type, occurred_at)
         VALUES ('sendgrid', $1, $2, 'accepted', now())`,
        [`planted-${orderId}`, orderId],
      ),
    ).toBe(PERMISSION_DENIED);
    expect(
      await outcome(
        worker,
        `INSERT INTO order_mail_webhook_deliveries (provider, token, signed_at) VALUES ('sendgrid', $1, now())`,
        [`worker-${orderId}`],
      ),
    ).toBe(PERMISSION_DENIED);
    expect(await outcome(worker, `DELETE FROM order_mail_webhook_deliveries WHERE signed_at < now()`)).toBe(
      PERMISSION_DENIED,
    );
    expect(await outcome(worker, `SELECT token FROM order_mail_webhook_deliveries LIMIT 1`)).toBe(
      PERMISSION_DENIED,
    );
    // The sweep's mark, moved twice (the second time an UPDATE), and read back.
    const namespace = `least-privilege-${orderId}`;
    await advanceSweepProgress(worker, { namespace, graceMs: 0 });
    await advanceSweepProgress(worker, { namespace, graceMs: 0 });
    expect(await sweepResumesFrom(worker, { namespace, graceMs: 0 })).toBeInstanceOf(Date);
    await assertSchemaReady(worker);
  });

  it('a mistaken grant opens nothing: the trigger refuses UPDATE to anyone and DELETE to all but the owner', async () => {
    const orderId = await createOrder(database.admin);
    await database.admin.query(
      `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, outcome)
       VALUES ($1, 'failed', 1, 'default/x/run-1', now(), 'not_sent')`,
      [orderId],
    );
    await worker.query(
      `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                        recorded_by)
       VALUES ($1, 1, 'default/x/run-1', 0, now(), 'failed', 'not_sent', 'test')`,
      [orderId],
    );
    await operator.query(
      `INSERT INTO order_mail_operator_acts (order_id, act, operator, reason) VALUES ($1, 'retry', 'x', 'y')`,
      [orderId],
    );
    const migration = createDatabase({
      connectionString: database.migrationUrl,
      applicationName: 'test migrator',
    });
    try {
      await migration.query(
        `GRANT UPDATE, DELETE ON order_mail_attempts, order_mail_operator_acts TO ${database.workerUser}`,
      );
      for (const table of ['order_mail_attempts', 'order_mail_operator_acts']) {
        // The worker now holds the grants, and the trigger still refuses.
        expect(
          await outcome(worker, `UPDATE ${table} SET order_id = order_id WHERE order_id = $1`, [orderId]),
        ).toBe(PERMISSION_DENIED);
        expect(await outcome(worker, `DELETE FROM ${table} WHERE order_id = $1`, [orderId])).toBe(
          PERMISSION_DENIED,
        );
        // Even the owner never updates an audit row; it may delete one (a retention job).
        expect(
          await outcome(migration, `UPDATE ${table} SET order_id = order_id WHERE order_id = $1`, [orderId]),
        ).toBe(PERMISSION_DENIED);
      }
      const { rows } = await database.admin.query(
        'SELECT count(*)::int AS n FROM order_mail_attempts WHERE order_id = $1',
        [orderId],
      );
      expect(rows[0]).toEqual({ n: 1 });
      expect(
        await outcome(migration, 'DELETE FROM order_mail_operator_acts WHERE order_id = $1', [orderId]),
      ).toBe('ok');
    } finally {
      await migration.query(
        `REVOKE UPDATE, DELETE ON order_mail_attempts, order_mail_operator_acts FROM ${database.workerUser}`,
      );
      await migration.close();
    }
  });

  it('a reset the worker observed is recorded under its own login, whatever the insert says', async () => {
    const orderId = await createOrder(database.admin);
    const { rows } = await worker.query<{ recorded_by: string }>(
      `INSERT INTO order_mail_observed_resets (order_id, new_run_id, base_run_id, reason, temporal_identity, recorded_by)
       VALUES ($1, 'run-2', 'run-1', 'address fixed', 'history-service', 'forged') RETURNING recorded_by`,
      [orderId],
    );
    expect(rows[0]).toEqual({ recorded_by: database.workerUser });
  });
});

describe("an operator's own login", () => {
  it('an act records the login, whatever the insert names', async () => {
    const orderId = await createOrder(database.admin);
    const { rows } = await operator.query<{ operator: string; db_session_user: string }>(
      `INSERT INTO order_mail_operator_acts (order_id, act, operator, reason, db_session_user)
       VALUES ($1, 'retry', 'someone else', 'test', 'forged') RETURNING operator, db_session_user`,
      [orderId],
    );
    expect(rows[0]).toEqual({ operator: database.operatorUser, db_session_user: database.operatorUser });
  });

  it('reads the mail tables and whether an order exists, and nothing more of the shop', async () => {
    const orderId = await createOrder(database.admin);
    // Through the contract's view, the order's id only (0063); the shop's table not at all.
    const view = 'order_mail_source.orders_for_mail';
    expect(await outcome(operator, `SELECT order_id FROM ${view} WHERE order_id = $1`, [orderId])).toBe('ok');
    expect(await outcome(operator, `SELECT customer_email FROM ${view} WHERE order_id = $1`, [orderId])).toBe(
      PERMISSION_DENIED,
    );
    expect(await outcome(operator, 'SELECT id FROM orders WHERE id = $1', [orderId])).toBe(PERMISSION_DENIED);
    expect(await outcome(operator, 'SELECT * FROM order_mail_observed_resets')).toBe('ok');
    // It settles rows (resolve is an UPDATE); it never claims one, and no audit row is changed.
    expect(
      await outcome(
        operator,
        `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at)
         VALUES ($1, 'sending', 1, 'x', now())`,
        [orderId],
      ),
    ).toBe(PERMISSION_DENIED);
    expect(
      await outcome(
        operator,
        `INSERT INTO order_mail_observed_resets (order_id, new_run_id, base_run_id, reason,
                                 temporal_identity) VALUES ($1, 'a', 'b', 'c', 'd')`,
        [orderId],
      ),
    ).toBe(PERMISSION_DENIED);
    expect(await outcome(operator, 'DELETE FROM order_mail_operator_acts')).toBe(PERMISSION_DENIED);
  });
});

describe('npm run db:roles', () => {
  it('refuses empty, short and placeholder passwords, among them every one .env.example ships', () => {
    const example = parseEnvFile(readFileSync(path.join(__dirname, '..', '..', '.env.example'), 'utf8'));
    for (const name of ['POSTGRES_PASSWORD', 'MIGRATOR_DB_PASSWORD', 'WORKER_DB_PASSWORD']) {
      expect(example[name], `${name} in .env.example`).toBeDefined();
      expect(weakPasswordProblem(name, 'someone', example[name]!), name).not.toBeNull();
    }
    expect(weakPasswordProblem('x', 'u', '')).toMatch(/no password/);
    expect(weakPasswordProblem('x', 'u', 'Change-Me-0123456789')).toMatch(/placeholder/);
    expect(weakPasswordProblem('x', 'u', 'short')).toMatch(/shorter/);
    expect(weakPasswordProblem('x', 'a-long-user-name-here', 'a-long-user-name-here')).toMatch(/user name/);
    expect(weakPasswordProblem('x', 'u', 'f3b9c1d2e8a74c6b9d0e')).toBeNull();
  });

  it('changes nothing when a password is weak', async () => {
    const url = (user: string, password: string) => {
      const parsed = new URL(database.adminUrl);
      parsed.username = user;
      parsed.password = password;
      return parsed.toString();
    };
    await expect(
      setUpDatabaseRoles({
        adminUrl: database.adminUrl,
        migrationUrl: url('test_weak_migrator', 'change-me'),
        workerUrl: url('test_weak_worker', 'f3b9c1d2e8a74c6b9d0e'),
      }),
    ).rejects.toBeInstanceOf(RoleSetupError);
    const { rows } = await database.admin.query(
      `SELECT rolname FROM pg_roles WHERE rolname IN ('test_weak_migrator', 'test_weak_worker')`,
    );
    expect(rows).toEqual([]);
  });

  it("an operator's login: weak refused, and never the workers' group", async () => {
    const url = (user: string, password: string) => {
      const parsed = new URL(database.adminUrl);
      parsed.username = user;
      parsed.password = password;
      return parsed.toString();
    };
    await expect(
      setUpDatabaseRoles({
        adminUrl: database.adminUrl,
        migrationUrl: database.migrationUrl,
        workerUrl: database.workerUrl,
        operatorUrl: url('test_weak_operator', 'change-me'),
      }),
    ).rejects.toThrow(/OPS_DATABASE_URL's password is a placeholder/);
    const { rows } = await database.admin.query<{ groups: string[] }>(
      `SELECT array(SELECT g.rolname::text FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
                     WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = $1) ORDER BY 1) AS groups`,
      [database.operatorUser],
    );
    expect(rows[0]!.groups).toEqual(['order_mail_operators']);
  });
});
