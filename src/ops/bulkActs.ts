// `npm run ops -- bulk …` (docs/operating.md "Acting on many orders"): a saved selection, acted on one order at
// a time through the per-order act; an interrupted run resumes by its id, asking Temporal where a retry may
// have reached it.
import {
  inTransaction,
  listBulkOrders,
  lockBulkAct,
  markBulkFinished,
  markBulkStarted,
  markOrderActing,
  markOrderDone,
  markOrderRefused,
  readBulkAct,
  saveSelection,
  selectionHash,
  selectOrderIds,
  type BulkActRow,
  type BulkFilter,
  type BulkOrderRow,
  type BulkVerb,
} from '../db/bulkActs';
import { insertRetryAct, type OperatorActRow } from '../db/operatorActs';
import { resetHistoryReader } from '../temporal/resetHistory';
import { OpsRefusal, requireReason, type OpsContext } from './opsContext';
import { describeWorkflow } from './orderMailStatus';
import { resolveOrderMail } from './resolveOrderMail';
import { retryOrderMail } from './retryOrderMail';

/** Above this many orders a dry run needs --max: a bound the operator states, not one a filter typo sets. */
export const DEFAULT_BULK_MAX = 100;
export const BULK_MAX_LIMIT = 10_000;
// How many order ids a refusal or a summary names before it only counts.
const NAMED = 20;

export interface BulkDryRun {
  bulk: BulkActRow;
  orderIds: string[];
}

export class SelectionChanged extends OpsRefusal {
  constructor(
    readonly bulkId: string,
    readonly added: string[],
    readonly removed: string[],
  ) {
    super(
      'SELECTION_CHANGED',
      `Bulk act ${bulkId}'s filter now selects other orders than its dry run saved; nothing was done. ` +
        `${describeIds('Selected now, not then', added)}${describeIds('Selected then, not now', removed)}` +
        'Look at them, then run the dry run again and run its new id.',
    );
  }
}

function describeIds(label: string, ids: readonly string[]): string {
  if (ids.length === 0) return '';
  const shown = ids.slice(0, NAMED).join(', ');
  return `${label} (${ids.length}): ${shown}${ids.length > NAMED ? ', …' : ''}. `;
}

export function hasCriterion(filter: BulkFilter): boolean {
  return Object.values(filter).some((value) => value !== null);
}

/** Selects and saves; changes nothing else. Refused when nothing or more than `max` orders are selected. */
export async function dryRunBulkAct(
  ctx: OpsContext,
  input: { verb: BulkVerb; filter: BulkFilter; reason: string | undefined; max?: number },
): Promise<BulkDryRun> {
  const reason = requireReason(input.reason, 'bulk');
  const max = input.max ?? DEFAULT_BULK_MAX;
  const orderIds = await selectOrderIds(ctx.db, input.filter);
  if (orderIds.length === 0) {
    throw new OpsRefusal('NOTHING_SELECTED', 'The filter selects no order; nothing was saved.');
  }
  if (orderIds.length > max) {
    throw new OpsRefusal(
      'TOO_MANY_ORDERS',
      `The filter selects ${orderIds.length} orders, more than ${max}` +
        (input.max === undefined ? ' (the default bound)' : '') +
        `; nothing was saved. If that many is meant, say so with --max ${orderIds.length} (at most ${BULK_MAX_LIMIT}).`,
    );
  }
  const bulk = await saveSelection(ctx.db, {
    verb: input.verb,
    filter: input.filter,
    reason,
    maxOrders: max,
    orderIds,
  });
  return { bulk, orderIds };
}

export interface BulkProgress {
  /** 1-based, over the selection. */
  index: number;
  total: number;
  orderId: string;
  status: 'done' | 'refused';
  /** The act's id, or the refusal's code and message. */
  detail: string;
}

export interface BulkRunResult {
  bulk: BulkActRow;
  /** False when this run resumed one begun before. */
  started: boolean;
  /** Acted on by this run. */
  done: string[];
  refused: { orderId: string; refusal: string }[];
  /** Done or refused before this run (a resume). */
  before: number;
}

export interface BulkRunHooks {
  /** Called inside each act's transaction, after the act, before it commits: tests interrupt a run here. */
  beforeCommit?(orderId: string, acted: number): void | Promise<void>;
}

/**
 * Runs a saved selection: the first run selects again and acts only if the selection is unchanged; a later
 * run of the same id resumes, acting on the orders not yet done or refused.
 */
export async function runBulkAct(
  ctx: OpsContext,
  input: { id: string; onProgress?: (progress: BulkProgress) => void; hooks?: BulkRunHooks },
): Promise<BulkRunResult> {
  if (!/^[1-9][0-9]{0,17}$/.test(input.id)) {
    throw new OpsRefusal('NO_SUCH_BULK_ACT', `"${input.id}" is not a bulk act's id; nothing was done.`);
  }
  const found = await readBulkAct(ctx.db, input.id);
  if (found === null) {
    throw new OpsRefusal('NO_SUCH_BULK_ACT', `There is no bulk act ${input.id}; nothing was done.`);
  }
  // The lock's transaction does nothing else: it only holds the run's claim on this bulk act while it lasts.
  return ctx.db.transaction(async (lockClient) => {
    if (!(await lockBulkAct(lockClient, found.id))) {
      throw new OpsRefusal(
        'BULK_ACT_RUNNING',
        `Bulk act ${found.id} is being run by another process right now; nothing was done.`,
      );
    }
    let started = false;
    if (found.startedAt === null) {
      const now = await selectOrderIds(ctx.db, found.filter);
      if (selectionHash(now) !== found.selectionSha256) {
        const saved = new Set((await listBulkOrders(ctx.db, found.id)).map((order) => order.orderId));
        const current = new Set(now);
        throw new SelectionChanged(
          found.id,
          now.filter((id) => !saved.has(id)),
          [...saved].filter((id) => !current.has(id)),
        );
      }
      started = await markBulkStarted(ctx.db, found.id);
    }
    const orders = await listBulkOrders(ctx.db, found.id);
    const result: BulkRunResult = {
      bulk: found,
      started,
      done: [],
      refused: [],
      before: orders.filter((order) => order.status === 'done' || order.status === 'refused').length,
    };
    let index = 0;
    for (const order of orders) {
      index += 1;
      if (order.status === 'done' || order.status === 'refused') continue;
      const outcome = await actOnOrder(ctx, found, order, input.hooks, result.done.length);
      if (outcome.kind === 'done') result.done.push(order.orderId);
      else result.refused.push({ orderId: order.orderId, refusal: outcome.refusal });
      input.onProgress?.({
        index,
        total: orders.length,
        orderId: order.orderId,
        status: outcome.kind,
        detail: outcome.kind === 'done' ? `act ${outcome.actId}` : outcome.refusal,
      });
    }
    await markBulkFinished(ctx.db, found.id);
    return { ...result, bulk: (await readBulkAct(ctx.db, found.id)) ?? found };
  });
}

type OrderOutcome = { kind: 'done'; actId: string } | { kind: 'refused'; refusal: string };

/** The reason each order's act carries: the bulk act's id first, so the act and the reset name it. */
export function bulkReason(bulk: BulkActRow): string {
  return `bulk ${bulk.id}: ${bulk.reason}`;
}

async function actOnOrder(
  ctx: OpsContext,
  bulk: BulkActRow,
  order: BulkOrderRow,
  hooks: BulkRunHooks | undefined,
  actedSoFar: number,
): Promise<OrderOutcome> {
  const reason = bulkReason(bulk);
  const commit = async (work: (txCtx: OpsContext) => Promise<OperatorActRow>): Promise<OrderOutcome> => {
    try {
      return await ctx.db.transaction(async (client) => {
        const txCtx: OpsContext = { ...ctx, db: inTransaction(client) };
        const act = await work(txCtx);
        if (!(await markOrderDone(txCtx.db, { bulkId: bulk.id, orderId: order.orderId, actId: act.id }))) {
          throw new Error(`bulk act ${bulk.id}: order ${order.orderId} was taken by another run`);
        }
        await hooks?.beforeCommit?.(order.orderId, actedSoFar + 1);
        return { kind: 'done' as const, actId: act.id };
      });
    } catch (error) {
      if (!(error instanceof OpsRefusal)) throw error;
      // The per-order act refused before changing anything (its transaction rolled back): recorded, and on.
      const refusal = `${error.code}: ${error.message}`;
      await markOrderRefused(ctx.db, { bulkId: bulk.id, orderId: order.orderId, refusal });
      return { kind: 'refused', refusal };
    }
  };

  if (bulk.verb === 'resolve') {
    const as = bulk.resolveAs!;
    // All in the database: the act and the order's progress commit together or not at all.
    return commit((txCtx) => resolveOrderMail(txCtx, { orderId: order.orderId, as, reason }));
  }

  const workflow = await describeWorkflow(ctx, order.orderId);
  if (order.status === 'acting') {
    // This order's retry began in a run that was interrupted: it may have reached Temporal without its act.
    const reached = await retryReachedTemporal(ctx, order, workflow, reason);
    if (reached === 'unclear') {
      return commit(() => {
        throw new OpsRefusal(
          'CHANGED_MEANWHILE',
          `Order ${order.orderId}'s workflow changed since an interrupted run of bulk act ${bulk.id} began its ` +
            `retry, and not by that retry; nothing more was done. Look at it alone: npm run ops -- status ${order.orderId}`,
        );
      });
    }
    if (reached !== null) {
      return commit(async (txCtx) =>
        insertRetryAct(txCtx.db, {
          orderId: order.orderId,
          reason,
          rowBefore: null,
          details: { ...reached, resumedByBulkAct: bulk.id },
        }),
      );
    }
  } else if (
    !(await markOrderActing(ctx.db, {
      bulkId: bulk.id,
      orderId: order.orderId,
      baseRunId: workflow?.runId ?? null,
    }))
  ) {
    throw new Error(`bulk act ${bulk.id}: order ${order.orderId} was taken by another run`);
  }
  return commit(async (txCtx) => (await retryOrderMail(txCtx, { orderId: order.orderId, reason })).act);
}

/**
 * An 'acting' order: null when its retry did not reach Temporal, the act's details when it did, else
 * 'unclear'.
 */
async function retryReachedTemporal(
  ctx: OpsContext,
  order: BulkOrderRow,
  workflow: Awaited<ReturnType<typeof describeWorkflow>>,
  reason: string,
): Promise<Record<string, unknown> | null | 'unclear'> {
  if (workflow === null) return null;
  // No run when it began: the retry starts one, idempotently by workflow id; a run there now is that start.
  if (order.baseRunId === null) return { started: 'started', newRunId: workflow.runId };
  if (workflow.runId === order.baseRunId) return null;
  const reset = await resetHistoryReader(ctx.client)(order.orderId, workflow.runId);
  if (reset?.baseRunId !== order.baseRunId || !reset.reason.endsWith(`: ${reason}`)) return 'unclear';
  return {
    reset: { previousRunId: reset.baseRunId, previousStatus: null, newRunId: reset.newRunId },
    eventId: Number(reset.eventId),
  };
}
