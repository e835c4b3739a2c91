// The least-privilege logins (docs/production.md "Least privilege"), made by `npm run db:roles` from the
// service's URLs; passwords are checked and reach Postgres only as SCRAM verifiers, never as text.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { Client, escapeIdentifier, escapeLiteral } from 'pg';
import { describeCaseStudyTable } from './caseStudyTable';
import { ORDER_ITEMS_VIEW, ORDER_SOURCE_SCHEMA, ORDERS_VIEW } from './orderContract';

/** The group role migration 0010 grants the workers' privileges to. */
export const WORKER_GROUP_ROLE = 'order_mail_worker';
/** The group role migration 0025 grants the webhook receiver's privileges to. */
export const WEBHOOK_GROUP_ROLE = 'order_mail_webhooks';
/** The group of the migration login (migration 0050): it grants nothing, it says the login is this service's. */
export const MIGRATION_GROUP_ROLE = 'order_mail_migration';
/** The operators' group (migration 0057): each operator's own login, which `npm run ops` runs as. */
export const OPERATOR_GROUP_ROLE = 'order_mail_operators';
/** The groups the trigger takes for this service's, by explicit grant (docs/design.md "Who is the service"). */
export const SERVICE_GROUP_ROLES = [WORKER_GROUP_ROLE, OPERATOR_GROUP_ROLE, MIGRATION_GROUP_ROLE] as const;

const MIN_PASSWORD_LENGTH = 16;
const PLACEHOLDER_PASSWORDS = [
  'change-me',
  'changeme',
  'password',
  'postgres',
  'secret',
  'temporal',
  'example',
];

export class RoleSetupError extends Error {
  override readonly name = 'RoleSetupError';
  readonly code = 'ERR_ROLE_SETUP';
}

/** Why `password` must not be used for `user` (named `what` in the message), or null when it may. */
export function weakPasswordProblem(what: string, user: string, password: string): string | null {
  if (password === '') return `${what} has no password`;
  const lower = password.toLowerCase();
  if (PLACEHOLDER_PASSWORDS.some((placeholder) => lower.includes(placeholder))) {
    return `${what}'s password is a placeholder (it contains a well-known default): choose a real one`;
  }
  if (lower === user.toLowerCase()) return `${what}'s password is its user name`;
  if (password.length < MIN_PASSWORD_LENGTH) {
    return `${what}'s password is shorter than ${MIN_PASSWORD_LENGTH} characters`;
  }
  // libpq prepares a password (SASLprep) before SCRAM and node-postgres does not: for printable ASCII both
  // use the bytes as they are, so one verifier works for every client.
  if (!/^[\x21-\x7e]+$/.test(password)) {
    return `${what}'s password has characters other than printable ASCII (no spaces)`;
  }
  return null;
}

/**
 * The SCRAM-SHA-256 verifier (RFC 5802, RFC 7677) Postgres stores, computed here so the password is never
 * sent.
 */
export function scramSha256Verifier(
  password: string,
  salt: Buffer = randomBytes(16),
  iterations = 4096,
): string {
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

export interface RoleUrls {
  /** A role that may create roles and grant on the app database: a superuser, or CREATEROLE and its owner. */
  adminUrl: string;
  migrationUrl: string;
  workerUrl: string;
  /** The webhook receiver's login; absent: not made. */
  webhookUrl?: string;
  /** One operator's own login; absent: not made. */
  operatorUrl?: string;
}

export interface RoleSetupReport {
  database: string;
  migrator: string;
  worker: string;
  /** The webhook receiver's login, when its URL was given. */
  webhooks: string | null;
  /** The operator's login, when its URL was given. */
  operator: string | null;
  /** Login roles that did not exist and were made. */
  created: string[];
  /** Mail tables made before the roles existed (by the admin), now owned by the migration role. */
  ownershipMoved: string[];
  /** The case study's order_mail_log, handed to the migration role for adoption: its previous owner. */
  caseStudyTableFrom: string | null;
}

interface Login {
  user: string;
  password: string;
  database: string;
}

function loginOf(what: string, url: string): Login {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RoleSetupError(`${what} is not a postgres:// URL`);
  }
  return {
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')),
  };
}

/** Makes (or updates) the two login roles and the worker group, and grants what they need. Idempotent. */
export async function setUpDatabaseRoles(urls: RoleUrls): Promise<RoleSetupReport> {
  const admin = loginOf('ADMIN_DATABASE_URL', urls.adminUrl);
  const migrator = loginOf('MIGRATION_DATABASE_URL', urls.migrationUrl);
  const worker = loginOf('DATABASE_URL', urls.workerUrl);
  const webhooks = urls.webhookUrl === undefined ? null : loginOf('WEBHOOK_DATABASE_URL', urls.webhookUrl);
  const operator = urls.operatorUrl === undefined ? null : loginOf('OPS_DATABASE_URL', urls.operatorUrl);
  const problems = [
    weakPasswordProblem('ADMIN_DATABASE_URL', admin.user, admin.password),
    weakPasswordProblem('MIGRATION_DATABASE_URL', migrator.user, migrator.password),
    weakPasswordProblem('DATABASE_URL', worker.user, worker.password),
    webhooks === null ? null : weakPasswordProblem('WEBHOOK_DATABASE_URL', webhooks.user, webhooks.password),
    operator === null ? null : weakPasswordProblem('OPS_DATABASE_URL', operator.user, operator.password),
  ].filter((problem): problem is string => problem !== null);
  const logins = [
    admin,
    migrator,
    worker,
    ...(webhooks === null ? [] : [webhooks]),
    ...(operator === null ? [] : [operator]),
  ];
  if (new Set(logins.map((login) => login.database)).size !== 1) {
    problems.push(
      `the URLs must name the same database (they name ${logins.map((login) => login.database).join(', ')})`,
    );
  }
  const users = logins.map((login) => login.user);
  if (new Set(users).size !== users.length) {
    problems.push(
      `the admin, the migration role, the worker role, the webhook role and the operator must be distinct roles (${users.join(', ')})`,
    );
  }
  if (worker.user === WORKER_GROUP_ROLE) {
    problems.push(`the worker's login must not be the group role ${WORKER_GROUP_ROLE} itself`);
  }
  if (webhooks !== null && [WORKER_GROUP_ROLE, WEBHOOK_GROUP_ROLE].includes(webhooks.user)) {
    problems.push(`the webhook receiver's login must not be a group role itself`);
  }
  const groups: string[] = [WORKER_GROUP_ROLE, WEBHOOK_GROUP_ROLE, MIGRATION_GROUP_ROLE, OPERATOR_GROUP_ROLE];
  if (operator !== null && groups.includes(operator.user)) {
    problems.push(`the operator's login must not be a group role itself`);
  }
  if (problems.length > 0) {
    throw new RoleSetupError(`Database roles not set up (nothing changed): ${problems.join('; ')}.`);
  }

  const client = new Client({
    connectionString: urls.adminUrl,
    application_name: 'order-mail-roles',
    connectionTimeoutMillis: 10_000,
  });
  await client.connect();
  try {
    await client.query('BEGIN');
    const created: string[] = [];
    const exists = async (role: string): Promise<boolean> =>
      ((await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount ?? 0) > 0;
    // The groups always: migrations 0010, 0025, 0050 and 0057 need them, and the migration role may not make roles.
    for (const group of groups) {
      if (!(await exists(group))) await client.query(`CREATE ROLE ${escapeIdentifier(group)} NOLOGIN`);
    }
    for (const login of [
      migrator,
      worker,
      ...(webhooks === null ? [] : [webhooks]),
      ...(operator === null ? [] : [operator]),
    ]) {
      const role = escapeIdentifier(login.user);
      // Never a superuser or a role maker: the point of these two is what they may not do. The password
      // goes as its verifier only.
      const attributes = `LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD ${escapeLiteral(scramSha256Verifier(login.password))}`;
      if (await exists(login.user)) {
        await client.query(`ALTER ROLE ${role} WITH ${attributes}`);
      } else {
        await client.query(`CREATE ROLE ${role} WITH ${attributes}`);
        created.push(login.user);
      }
    }
    const database = escapeIdentifier(migrator.database);
    const migratorRole = escapeIdentifier(migrator.user);
    await client.query(
      `GRANT CONNECT ON DATABASE ${database} TO ${migratorRole}, ${escapeIdentifier(worker.user)}`,
    );
    await client.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${migratorRole}`);
    // Before PostgreSQL 15 every role may create in public; the workers' role must not.
    await client.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    await client.query(`GRANT ${escapeIdentifier(WORKER_GROUP_ROLE)} TO ${escapeIdentifier(worker.user)}`);
    // What the migrations write to order_mail_log is this service's (0050): by membership, not ownership.
    await client.query(`GRANT ${escapeIdentifier(MIGRATION_GROUP_ROLE)} TO ${migratorRole}`);
    if (webhooks !== null) {
      // Its own group only: never order_mail_worker, whose grants include every customer's address.
      const login = escapeIdentifier(webhooks.user);
      await client.query(`GRANT CONNECT ON DATABASE ${database} TO ${login}`);
      await client.query(`GRANT ${escapeIdentifier(WEBHOOK_GROUP_ROLE)} TO ${login}`);
      await client.query(`REVOKE ${escapeIdentifier(WORKER_GROUP_ROLE)} FROM ${login}`);
    }
    if (operator !== null) {
      // Its own group only: an operator's acts are its own, and the workers' role may write none (0057).
      const login = escapeIdentifier(operator.user);
      await client.query(`GRANT CONNECT ON DATABASE ${database} TO ${login}`);
      await client.query(`GRANT ${escapeIdentifier(OPERATOR_GROUP_ROLE)} TO ${login}`);
      await client.query(`REVOKE ${escapeIdentifier(WORKER_GROUP_ROLE)} FROM ${login}`);
    }
    // Until 0063 drops them, older migrations make foreign keys to orders (id): REFERENCES is needed.
    const { rows: ordersId } = await client.query(
      `SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('orders') AND attname = 'id' AND NOT attisdropped`,
    );
    if (ordersId.length > 0) {
      await unlessNotPermitted(client, async () => {
        await client.query(`GRANT REFERENCES (id) ON orders TO ${migratorRole}`);
      });
    }
    // The order contract's schema, for the migration login to make the demo's views in (migration 0063); a
    // shop's own views go there too, made by its owner (docs/adoption.md).
    await client.query(
      `CREATE SCHEMA IF NOT EXISTS ${escapeIdentifier(ORDER_SOURCE_SCHEMA)} AUTHORIZATION ${migratorRole}`,
    );
    // The shop's orders only through the order contract's views (docs/design.md §8); the worker names any
    // grant missing here when it starts.
    const { rows: contract } = await client.query<{ view: string }>(
      `SELECT c.relname AS view FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = ANY($2::text[]) ORDER BY 1`,
      [ORDER_SOURCE_SCHEMA, [ORDERS_VIEW, ORDER_ITEMS_VIEW]],
    );
    if (contract.length > 0) {
      const schema = escapeIdentifier(ORDER_SOURCE_SCHEMA);
      const group = escapeIdentifier(WORKER_GROUP_ROLE);
      const operators = escapeIdentifier(OPERATOR_GROUP_ROLE);
      await unlessNotPermitted(client, async () => {
        await client.query(`GRANT USAGE ON SCHEMA ${schema} TO ${group}, ${operators}`);
        for (const { view } of contract) {
          await client.query(`GRANT SELECT ON ${schema}.${escapeIdentifier(view)} TO ${group}`);
        }
        if (contract.some(({ view }) => view === ORDERS_VIEW)) {
          await client.query(
            `GRANT SELECT (order_id) ON ${schema}.${escapeIdentifier(ORDERS_VIEW)} TO ${operators}`,
          );
        }
      });
    }
    // Adoption renames the case study's table, which only its owner may: hand it to the migration role, and
    // keep its previous owner writing it while the old workers run (docs/adoption.md).
    let caseStudyTableFrom: string | null = null;
    if ((await describeCaseStudyTable(client)).kind === 'case-study') {
      const { rows: logOwner } = await client.query<{ owner: string; migrator: boolean }>(
        `SELECT pg_get_userbyid(relowner) AS owner, pg_has_role($1, relowner, 'USAGE') AS migrator
           FROM pg_class WHERE oid = to_regclass('order_mail_log')`,
        [migrator.user],
      );
      const found = logOwner[0];
      if (found !== undefined && !found.migrator) {
        const handedOver = await unlessNotPermitted(client, async () => {
          // In this order: a change of owner drops what the old owner held as owner.
          await client.query(`ALTER TABLE order_mail_log OWNER TO ${migratorRole}`);
          await client.query(
            `GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${escapeIdentifier(found.owner)}`,
          );
        });
        if (handedOver) caseStudyTableFrom = found.owner;
      }
    }
    // Mail tables an earlier build made as this admin (workers migrated at start before): the migration role
    // must own them to migrate them further.
    const { rows: owned } = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND c.relname LIKE 'order\\_mail\\_%'
        ORDER BY 1`,
    );
    for (const { name } of owned) {
      await client.query(`ALTER TABLE ${escapeIdentifier(name)} OWNER TO ${migratorRole}`);
    }
    // And their functions (the triggers'): a later migration replaces one only as its owner (0050 does).
    const { rows: functions } = await client.query<{ signature: string }>(
      `SELECT p.oid::regprocedure::text AS signature FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
        WHERE n.nspname = current_schema() AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
          AND p.proname LIKE 'order\\_mail\\_%'
        ORDER BY 1`,
    );
    for (const { signature } of functions) {
      await client.query(`ALTER FUNCTION ${signature} OWNER TO ${migratorRole}`);
    }
    await client.query('COMMIT');
    return {
      database: migrator.database,
      migrator: migrator.user,
      worker: worker.user,
      webhooks: webhooks?.user ?? null,
      operator: operator?.user ?? null,
      created,
      ownershipMoved: owned.map((row) => row.name),
      caseStudyTableFrom,
    };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * Runs `work` in a savepoint; false when refused for want of privilege (then `db:migrate` names the
 * statements for the owner: src/db/migrationPrerequisites.ts).
 */
async function unlessNotPermitted(client: Client, work: () => Promise<void>): Promise<boolean> {
  await client.query('SAVEPOINT shop_grant');
  try {
    await work();
    await client.query('RELEASE SAVEPOINT shop_grant');
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code !== '42501') throw error;
    await client.query('ROLLBACK TO SAVEPOINT shop_grant');
    return false;
  }
}
