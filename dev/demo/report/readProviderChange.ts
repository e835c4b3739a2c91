// The facts of a --provider-change run beyond the usual ones: each row's dispatch key fingerprint, the requests
// the rotated provider refused for their key, and the listing of the one ops command that names the customers
// left without a mail (run here exactly as an operator types it, through the CLI's entry point).
import type { Database } from '../../../src/db/pool';
import type { FailoverTarget } from '../failoverTarget';
import { opsJson, type ProviderChangeFacts } from '../providerChange';
import type { OpsListedOrder, ProviderChangeInput } from './providerChangeReport';

const LIST_LIMIT = 1_000;

export async function readProviderChangeFacts(input: {
  db: Database;
  change: ProviderChangeFacts;
  target: FailoverTarget;
  orderIds: string[];
  attempts: { orderId: string; provider: string | null }[];
  messages: { orderId: string }[];
  opsEnv: Record<string, string>;
  since: Date;
}): Promise<ProviderChangeInput> {
  const { rows } = await input.db.query<ProviderChangeInput['rows'][number]>(
    `SELECT order_id::text AS "orderId", state, dispatch_provider AS "dispatchProvider",
            dispatch_credential_fingerprint AS "dispatchCredentialFingerprint"
       FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
    [input.orderIds],
  );
  const sandbox = input.target.sandboxes.mailgun;
  const refusedForKey =
    sandbox.requests().filter((request) => request.status === 401).length +
    sandbox.lookups().filter((lookup) => lookup.status === 401).length;
  const argv = [
    'list',
    '--state',
    'failed',
    '--since',
    input.since.toISOString(),
    '--limit',
    String(LIST_LIMIT),
  ];
  let opsListing: OpsListedOrder[] | null = null;
  let opsFailure: string | null = null;
  try {
    const listed = (await opsJson(argv, input.opsEnv)) as {
      row: {
        orderId: string;
        state: string;
        outcome: string | null;
        httpStatus: number | null;
        lastError: string | null;
      };
    }[];
    opsListing = listed.map(({ row }) => ({
      orderId: row.orderId,
      state: row.state,
      reason: [
        row.outcome ?? '',
        row.httpStatus === null ? '' : `HTTP ${row.httpStatus}`,
        row.lastError ?? '',
      ]
        .filter((part) => part !== '')
        .join('; '),
    }));
  } catch (error) {
    opsFailure = error instanceof Error ? error.message : String(error);
  }
  return {
    change: input.change,
    orderIds: input.orderIds,
    rows,
    attempts: input.attempts,
    messages: input.messages,
    refusedForKey,
    opsCommand: `npm run ops -- ${argv.slice(0, 3).join(' ')} --since <run start> --limit ${LIST_LIMIT}`,
    opsListing,
    opsFailure,
  };
}
