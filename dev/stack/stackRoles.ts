// The native stack runs its workers as production should (docs/production.md, least privilege): the
// migrations as the migration login, which owns the mail tables, and the workers as a login in the group role
// order_mail_worker, which may read the orders and write the mail tables, no DDL, no DELETE. The passwords are
// made fresh at every start (the stack is a development topology), so none is a default that passes the guard.
import { randomBytes } from 'node:crypto';
import { setUpDatabaseRoles } from '../../src/db/roles';

export const STACK_MIGRATION_USER = 'order_mail_stack_migrator';
export const STACK_WORKER_USER = 'order_mail_stack_worker';

export interface StackDatabaseRoles {
  migrationUrl: string;
  workerUrl: string;
}

function withLogin(url: string, user: string, password: string): string {
  const login = new URL(url);
  login.username = user;
  login.password = password;
  return login.toString();
}

/** Makes (or sets the passwords of) the two logins on the app database that `adminUrl` names. */
export async function setUpStackDatabaseRoles(adminUrl: string): Promise<StackDatabaseRoles> {
  const password = () => randomBytes(24).toString('base64url');
  const roles = {
    migrationUrl: withLogin(adminUrl, STACK_MIGRATION_USER, password()),
    workerUrl: withLogin(adminUrl, STACK_WORKER_USER, password()),
  };
  await setUpDatabaseRoles({ adminUrl, ...roles });
  return roles;
}
