// Tests, the demo and the dev tools connect this service as the admin login (the embedded cluster's superuser)
// to save a role set-up per run. order_mail_log's trigger takes a write for this service's only from a member
// of its groups by explicit grant (migration 0050, docs/design.md "Who is the service"), so that login is made
// a member of order_mail_worker here, in the open. Outside writers (the case study's workers) get logins of
// their own in none of the groups.
import { Client, escapeIdentifier } from 'pg';
import { WORKER_GROUP_ROLE } from '../../src/db/roles';

/** Makes order_mail_worker if missing and grants it to the login `adminUrl` names. Idempotent. */
export async function grantServiceMembership(adminUrl: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl, application_name: 'order-mail-dev-membership' });
  await client.connect();
  try {
    const group = escapeIdentifier(WORKER_GROUP_ROLE);
    const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [WORKER_GROUP_ROLE]);
    if (rowCount === 0) {
      await client.query(`CREATE ROLE ${group} NOLOGIN`).catch((error: { code?: string }) => {
        // Made at the same moment by another process of this run.
        if (error.code !== '42710' && error.code !== '23505') throw error;
      });
    }
    const { rows } = await client.query<{ member: boolean }>(
      `SELECT EXISTS (SELECT FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
                       WHERE g.rolname = $1 AND m.member = (SELECT oid FROM pg_roles WHERE rolname = current_user))
                AS member`,
      [WORKER_GROUP_ROLE],
    );
    if (rows[0]?.member !== true) await client.query(`GRANT ${group} TO CURRENT_USER`);
  } finally {
    await client.end();
  }
}
