// docs/production.md lists the workers', the operators' and the webhook receiver's grants as the database holds them: read
// from the catalogs of a database that `npm run db:roles` and this build's migrations made, and compared with
// the doc's generated section. When a migration changes a grant, regenerate it:
//   UPDATE_DOCS=1 npx vitest run test/db/roleGrantsDoc.test.ts
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readRoleGrants, renderRoleGrants, withRoleGrants } from '../../dev/devtools/roleGrants';
import { migrate } from '../../src/db/migrator';
import { OPERATOR_GROUP_ROLE, WEBHOOK_GROUP_ROLE, WORKER_GROUP_ROLE } from '../../src/db/roles';
import { openLeastPrivilegeDatabase, type LeastPrivilegeDatabase } from '../support/testKit';

const DOC = path.join(__dirname, '..', '..', 'docs', 'production.md');
const ROLES = [WORKER_GROUP_ROLE, OPERATOR_GROUP_ROLE, WEBHOOK_GROUP_ROLE];

let database: LeastPrivilegeDatabase;

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('role_grants_doc');
  await migrate(database.migrationUrl);
});
afterAll(async () => {
  await database?.close();
});

it('docs/production.md lists the grants of order_mail_worker, order_mail_operators and order_mail_webhooks as the database holds them', async () => {
  const table = renderRoleGrants(await readRoleGrants(database.admin, ROLES), ROLES);
  const current = readFileSync(DOC, 'utf8');
  const wanted = withRoleGrants(current, table);
  if (process.env.UPDATE_DOCS === '1' && wanted !== current) writeFileSync(DOC, wanted);
  expect(readFileSync(DOC, 'utf8')).toBe(wanted);
  // The receiver's role holds nothing on the orders or the mail log, whatever the doc says.
  expect(table).not.toMatch(
    /`order_mail_webhooks` \| `(orders|order_items|order_mail_log|order_mail_attempts)`/,
  );
  // Operator acts are the operators' alone (migration 0057).
  expect(table).not.toMatch(/`order_mail_worker` \| `order_mail_operator_acts` \| [^|]*INSERT/);
  expect(table).toMatch(/`order_mail_operators` \| `order_mail_operator_acts` \| SELECT, INSERT \|/);
});
