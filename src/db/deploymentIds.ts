// The deployment id a namespace's workers send under (migration 0053).
import type { Database } from './pool';
import { runSql, sql } from './sql';

export class DeploymentIdMismatchError extends Error {
  override readonly name = 'DeploymentIdMismatchError';
  readonly code = 'ERR_DEPLOYMENT_ID_MISMATCH';
}

/**
 * Records `deploymentId` for `namespace`, or throws DeploymentIdMismatchError when another is recorded: two
 * ids would send and ask the provider under two keys.
 */
export async function assertDeploymentIdOfNamespace(
  db: Database,
  input: { namespace: string; deploymentId: string },
): Promise<void> {
  const { rows } = await runSql<{ recorded: string }>(
    db,
    sql`WITH inserted AS (
          INSERT INTO order_mail_deployment_ids (namespace, deployment_id)
          VALUES (${input.namespace}, ${input.deploymentId})
          ON CONFLICT (namespace) DO NOTHING
          RETURNING deployment_id)
        SELECT deployment_id AS recorded FROM inserted
        UNION ALL
        SELECT deployment_id FROM order_mail_deployment_ids WHERE namespace = ${input.namespace}
        LIMIT 1`,
  );
  // Empty only when another worker recorded the namespace concurrently: its row is visible to a new statement.
  const recorded =
    rows[0]?.recorded ??
    (
      await runSql<{ recorded: string }>(
        db,
        sql`SELECT deployment_id AS recorded FROM order_mail_deployment_ids WHERE namespace = ${input.namespace}`,
      )
    ).rows[0]?.recorded;
  if (recorded !== undefined && recorded !== input.deploymentId) {
    throw new DeploymentIdMismatchError(
      `MAIL_DEPLOYMENT_ID is ${JSON.stringify(input.deploymentId)}, but the workers of namespace ` +
        `${JSON.stringify(input.namespace)} send under ${JSON.stringify(recorded)} (order_mail_deployment_ids). ` +
        `Start this worker with MAIL_DEPLOYMENT_ID=${recorded}, or change the id deliberately as ` +
        'docs/operating.md says (every worker stopped, the row updated by the migration role, all started again).',
    );
  }
}
