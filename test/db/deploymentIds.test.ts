// Workers of one namespace send under one deployment id (migration 0053): the first to start records its
// MAIL_DEPLOYMENT_ID, one with another id refuses to start, and the id changes only by an operator's update of
// the row. Real Postgres under the least-privilege logins; the refusal also as a worker process would meet it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { assertDeploymentIdOfNamespace, DeploymentIdMismatchError } from '../../src/db/deploymentIds';
import { migrate } from '../../src/db/migrator';
import { createDatabase, type Database } from '../../src/db/pool';
import { openLeastPrivilegeDatabase, type LeastPrivilegeDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

let database: LeastPrivilegeDatabase;
let worker: Database;
const processes: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('deployment_ids');
  await migrate(database.migrationUrl);
  worker = createDatabase({ connectionString: database.workerUrl, applicationName: 'test deployment ids' });
}, 120_000);

afterAll(async () => {
  for (const running of processes) {
    running.child.kill('SIGKILL');
    await running.exited;
  }
  await worker?.close();
  await database?.close();
});

async function recorded(namespace: string): Promise<string | undefined> {
  const { rows } = await database.admin.query<{ id: string }>(
    'SELECT deployment_id AS id FROM order_mail_deployment_ids WHERE namespace = $1',
    [namespace],
  );
  return rows[0]?.id;
}

describe('the deployment id of a namespace', () => {
  it('is recorded by the first worker; the same id starts again, another is refused, another namespace is its own', async () => {
    const namespace = `ns-${randomUUID().slice(0, 8)}`;
    await assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'shop-eu' });
    expect(await recorded(namespace)).toBe('shop-eu');
    await assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'shop-eu' });

    await expect(
      assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'shop-us' }),
    ).rejects.toBeInstanceOf(DeploymentIdMismatchError);
    expect(await recorded(namespace)).toBe('shop-eu');

    const other = `${namespace}-staging`;
    await assertDeploymentIdOfNamespace(worker, { namespace: other, deploymentId: 'shop-staging' });
    expect(await recorded(other)).toBe('shop-staging');
  });

  it('two workers starting at once with different ids: exactly one id is recorded, the other worker is refused', async () => {
    const namespace = `ns-${randomUUID().slice(0, 8)}`;
    const results = await Promise.allSettled(
      ['one', 'two'].map((deploymentId) =>
        assertDeploymentIdOfNamespace(worker, { namespace, deploymentId }),
      ),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'rejected')).toHaveLength(1);
    expect(['one', 'two']).toContain(await recorded(namespace));
  });

  it('a worker may not change it; the migration role may, and then the new id starts and the old is refused', async () => {
    const namespace = `ns-${randomUUID().slice(0, 8)}`;
    await assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'old-id' });
    await expect(
      worker.query('UPDATE order_mail_deployment_ids SET deployment_id = $2 WHERE namespace = $1', [
        namespace,
        'new-id',
      ]),
    ).rejects.toMatchObject({ code: '42501' });
    await expect(
      worker.query('DELETE FROM order_mail_deployment_ids WHERE namespace = $1', [namespace]),
    ).rejects.toMatchObject({ code: '42501' });

    const migrator = createDatabase({
      connectionString: database.migrationUrl,
      applicationName: 'test operator',
    });
    try {
      await migrator.query('UPDATE order_mail_deployment_ids SET deployment_id = $2 WHERE namespace = $1', [
        namespace,
        'new-id',
      ]);
    } finally {
      await migrator.close();
    }
    await assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'new-id' });
    await expect(
      assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'old-id' }),
    ).rejects.toBeInstanceOf(DeploymentIdMismatchError);
  });
});

it('a worker process whose MAIL_DEPLOYMENT_ID differs from its namespace’s exits at once with status 1', async () => {
  const namespace = inject('temporalNamespace');
  await assertDeploymentIdOfNamespace(worker, { namespace, deploymentId: 'recorded-first' });
  const refused = spawnWorkerProcess({
    DATABASE_URL: database.workerUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_TASK_QUEUE: `deployment-ids-${randomUUID()}`,
    MAIL_DEPLOYMENT_ID: 'started-second',
    MAIL_API_BASE_URL: 'http://127.0.0.1:9',
    MAIL_API_KEY: 'sandbox-key',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  refused.started.catch(() => undefined);
  processes.push(refused);
  expect(await refused.exited, refused.output()).toBe(1);
  expect(await recorded(namespace)).toBe('recorded-first');
}, 60_000);
