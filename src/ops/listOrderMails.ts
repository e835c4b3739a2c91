// `npm run ops -- list --state failed|unknown|sending|sent [--since …] [--limit N]`: rows from the log, with
// whether their workflow still runs for the rows in 'sending' (a closed one means an orphan).
import { listMailLog, type MailLogFilter, type MailLogRow } from '../db/orderMailLog';
import type { OpsContext } from './opsContext';
import { describeWorkflow } from './orderMailStatus';
import { workflowUiUrl } from './workflowLinks';

export interface ListedOrderMail {
  row: MailLogRow;
  /** Only looked up for 'sending' rows: RUNNING, a closed status, or 'NOT_FOUND'. */
  workflowStatus: string | null;
  uiUrl: string;
}

const DEFAULT_LIST_LIMIT = 50;

export async function listOrderMails(
  ctx: OpsContext,
  input: { filter: MailLogFilter; since: Date | null; limit?: number },
): Promise<ListedOrderMail[]> {
  const rows = await listMailLog(ctx.db, {
    filter: input.filter,
    since: input.since,
    limit: input.limit ?? DEFAULT_LIST_LIMIT,
  });
  const listed: ListedOrderMail[] = [];
  for (const row of rows) {
    const workflow = row.state === 'sending' ? await describeWorkflow(ctx, row.orderId) : null;
    listed.push({
      row,
      workflowStatus: row.state === 'sending' ? (workflow?.status ?? 'NOT_FOUND') : null,
      uiUrl: workflowUiUrl(ctx.uiBaseUrl, ctx.namespace, row.orderId, workflow?.runId ?? null),
    });
  }
  return listed;
}
