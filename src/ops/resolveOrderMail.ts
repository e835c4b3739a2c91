// `npm run ops -- resolve <orderId> --as sent|failed --reason …`: the operator's explicit act
// (docs/design.md §4 rule 5); as failed, a deliberate re-send under a new key.
import { resolveMailLog, type OperatorActRow } from '../db/operatorActs';
import { readMailLog } from '../db/orderMailLog';
import { orderExists } from '../db/orders';
import { parseOrderId } from '../shared/orderId';
import { OpsRefusal, requireReason, type OpsContext } from './opsContext';
import { describeWorkflow, unknownOrder } from './orderMailStatus';
import { refuseWhileSendInFlight } from './sendInFlight';

export type ResolveAs = 'sent' | 'failed';

export async function resolveOrderMail(
  ctx: OpsContext,
  input: { orderId: string; as: ResolveAs; reason: string | undefined; force?: boolean },
): Promise<OperatorActRow & { warning?: string }> {
  const orderId = parseOrderId(input.orderId);
  const reason = requireReason(input.reason, 'resolve');
  if (!(await orderExists(ctx.db, orderId))) throw unknownOrder(orderId);

  const row = await readMailLog(ctx.db, orderId);
  if (row === null) {
    throw new OpsRefusal(
      'NO_MAIL_LOG_ROW',
      `Order ${orderId} has no mail log row: nothing was ever claimed, so there is nothing to resolve. ` +
        `If its workflow never started, reconciliation starts it, or: npm run start-mail -- ${orderId}`,
    );
  }
  if (input.as === 'sent' && row.state === 'sent' && row.outcome === 'accepted') {
    throw new OpsRefusal(
      'ALREADY_SENT',
      `Order ${orderId}'s mail was accepted by the provider (message id ${row.providerMessageId ?? 'not given'}); ` +
        'there is nothing to resolve.',
    );
  }
  // The second look already sent this mail again: a resolve as failed would give the customer two.
  if (input.as === 'failed' && row.secondLook === 'reopened' && input.force !== true) {
    throw new OpsRefusal(
      'SECOND_LOOK_RESENT',
      `Order ${orderId}'s mail was reopened by the second look on ${row.secondLookedAt!.toISOString()} (the ` +
        `provider proved attempt ${row.secondLookAttempt!} never reached it) and sent again by automation ` +
        `(now ${row.state}${row.outcome === null ? '' : `/${row.outcome}`}, ${row.attempts} attempt(s)). Resolving ` +
        'it as failed sends it once more under a new key: the customer would get a duplicate. If that is what ' +
        `you mean, add --force:\n  npm run ops -- resolve ${orderId} --as failed --force --reason "…"`,
    );
  }
  refuseWhileSendInFlight(orderId, row, await describeWorkflow(ctx, orderId));
  const act = await resolveMailLog(ctx.db, {
    orderId,
    as: input.as,
    reason,
    seen: {
      state: row.state,
      attempts: row.attempts,
      claimToken: row.claimToken,
      dispatched: row.dispatchedAt !== null,
    },
  });
  if (act === null) {
    throw new OpsRefusal(
      'CHANGED_MEANWHILE',
      `Order ${orderId}'s mail log row changed while resolving it (a send dispatched or finished?); nothing was changed. ` +
        `Look again: npm run ops -- status ${orderId}`,
    );
  }
  if (input.as === 'failed' && row.secondLook === 'reopened') {
    return {
      ...act,
      warning:
        `DUPLICATE: the second look had already sent order ${orderId}'s mail again; this resolve lets the next ` +
        'claim send it once more, under a new key.',
    };
  }
  return act;
}
