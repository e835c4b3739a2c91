// The operator section of a run report (`npm run chaos -- --operators`): what the operator did (each act done,
// refused or failed), which orders it deliberately asked to re-send or ended without a mail, and which it
// stopped before any claim. Pure, like report.ts (test/demo/operatorReport.test.ts); the invariants only an
// operator's acts can break are scenarioInvariants.ts's.
import { OPERATOR_ACTS, type OperatorActName } from '../operatorTools';
import type { SweepFacts } from '../sweep';
import type { OperatorActRecord, OperatorFacts, RunFact } from './facts';

export interface ActCounts {
  done: number;
  /** Refusal code → times: the product's own (SEND_IN_FLIGHT, ALREADY_SENT, …), Temporal's (RUN_CLOSED, …). */
  refused: Record<string, number>;
  failed: number;
  /** Times the act found nothing to act on (no send in flight at that moment, say). Not counted as acts. */
  noTarget: number;
}

export interface OperatorSection {
  /** Acts made (done + refused + failed), and of those done. */
  acts: number;
  done: number;
  perAct: Record<OperatorActName, ActCounts>;
  /** Orders an operator deliberately asked to send again (resolve --as failed, then retry), and how often. */
  resendsAsked: { orders: number; resends: number };
  /** Orders whose every run an operator closed before any claim: no row, no mail, as the operator chose. */
  stoppedBeforeClaim: number;
  /** Rows an operator resolved as sent although no message arrived: the operator's word, not checked. */
  resolvedSentWithoutMessage: number;
  sweeps: SweepFacts;
  /** Examples of failed acts (what failed), for the reader. */
  failures: string[];
}

/** What report.ts knows about one order, as far as the operator checks need it. */
export interface OrderFacts {
  orderId: string;
  row: { state: string; outcome: string | null } | undefined;
  messages: number;
}

/**
 * Extra messages an operator asked for, per order, from the operator's own log. A resolve --as failed that was
 * done says "the customer has no mail": it allows one more message if a run could claim the row after it,
 * because a retry or a reset of the order followed it, or because a run of the order was open at that moment
 * (it claims the failed row again). A resolve made while a send was in flight is counted here too; that it was
 * not refused is its own invariant.
 */
export function resendsAskedFor(
  acts: OperatorActRecord[],
  runs: Record<string, RunFact[]>,
): Map<string, number> {
  const allowed = new Map<string, number>();
  const allow = (orderId: string): void => void allowed.set(orderId, (allowed.get(orderId) ?? 0) + 1);
  const waitingForRerun = new Set<string>();
  for (const act of [...acts].sort((a, b) => a.at.localeCompare(b.at))) {
    if (act.result !== 'done') continue;
    if (act.act === 'ops-resolve-failed') {
      if (openRunAt(runs[act.orderId] ?? [], act.at)) allow(act.orderId);
      else waitingForRerun.add(act.orderId);
    } else if (isRerun(act.act) && waitingForRerun.delete(act.orderId)) {
      allow(act.orderId);
    }
  }
  return allowed;
}

/**
 * The acts done on these orders, by act: how many of the orders had each (an order counts once per act). An
 * order no operator touched counts under '(none)': its failure followed the faults alone.
 */
export function actsBehind(acts: OperatorActRecord[], orderIds: string[]): Record<string, number> {
  const done = new Map<string, Set<OperatorActName>>();
  for (const act of acts) {
    if (act.result !== 'done') continue;
    let kinds = done.get(act.orderId);
    if (kinds === undefined) done.set(act.orderId, (kinds = new Set()));
    kinds.add(act.act);
  }
  const counts: Record<string, number> = {};
  for (const orderId of orderIds) {
    const kinds = done.get(orderId);
    for (const kind of kinds === undefined || kinds.size === 0 ? ['(none)'] : kinds) {
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
  }
  return counts;
}

/** Whether one of these runs was open at `at` (ISO times compare as strings). */
export function openRunAt(runs: RunFact[], at: string): boolean {
  return runs.some((run) => run.startedAt <= at && (run.closedAt === null || run.closedAt > at));
}

function isRerun(act: OperatorActName): boolean {
  return act === 'ops-retry' || act === 'workflow-reset-first' || act === 'workflow-reset-last';
}

/**
 * Orders an operator ended without a mail on purpose: a done cancel or terminate (the run stopped, whatever it
 * was doing), or a done resolve (the operator's word that the mail is sent, or failed and left so). A customer
 * of such an order may have no mail, and that is the operator's doing, not the product's; the report still
 * counts every customer without a mail.
 */
export function endedWithoutMailByOperator(acts: OperatorActRecord[]): Set<string> {
  const ends = new Set<OperatorActRecord['act']>([
    'workflow-cancel',
    'workflow-terminate',
    'ops-resolve-sent',
    'ops-resolve-failed',
  ]);
  return new Set(acts.filter((act) => act.result === 'done' && ends.has(act.act)).map((act) => act.orderId));
}

/**
 * Orders one of whose runs an operator closed (terminate, or a reset, which terminates the run it resets):
 * a dispatched attempt of that run may be settled by the next claim or the sweep by the policy, unasked or
 * after an inconclusive answer (docs/design.md §5, "a closed run's unknown", and §9), and a customer left
 * without a mail by it is then the operator's doing.
 */
export function runClosedByOperator(acts: OperatorActRecord[]): Set<string> {
  const closes = new Set<OperatorActRecord['act']>([
    'workflow-terminate',
    'workflow-reset-first',
    'workflow-reset-last',
  ]);
  return new Set(
    acts.filter((act) => act.result === 'done' && closes.has(act.act)).map((act) => act.orderId),
  );
}

/** Orders with no row whose runs are all closed, each by an operator's cancel or terminate. */
export function stoppedBeforeClaim(facts: OperatorFacts, orders: OrderFacts[]): Set<string> {
  const stopped = new Set(
    facts.acts
      .filter(
        (act) => act.result === 'done' && (act.act === 'workflow-cancel' || act.act === 'workflow-terminate'),
      )
      .map((act) => act.orderId),
  );
  return new Set(
    orders
      .filter(
        (order) =>
          order.row === undefined &&
          order.messages === 0 &&
          stopped.has(order.orderId) &&
          (facts.runs[order.orderId] ?? []).length > 0 &&
          (facts.runs[order.orderId] ?? []).every((run) => run.status !== 'RUNNING'),
      )
      .map((order) => order.orderId),
  );
}

export function buildOperatorSection(facts: OperatorFacts, orders: OrderFacts[]): OperatorSection {
  const perAct = Object.fromEntries(
    OPERATOR_ACTS.map((act) => [act, { done: 0, refused: {}, failed: 0, noTarget: 0 } satisfies ActCounts]),
  ) as Record<OperatorActName, ActCounts>;
  const failures: string[] = [];
  for (const act of facts.acts) {
    const counts = perAct[act.act];
    if (act.result === 'done') counts.done += 1;
    else if (act.result === 'failed') {
      counts.failed += 1;
      if (failures.length < 10) failures.push(`${act.act} ${act.orderId}: ${act.detail ?? ''}`);
    } else if (act.detail === 'NO_TARGET') counts.noTarget += 1;
    else counts.refused[act.detail ?? 'REFUSED'] = (counts.refused[act.detail ?? 'REFUSED'] ?? 0) + 1;
  }
  const made = facts.acts.filter((act) => act.detail !== 'NO_TARGET');
  const resends = resendsAskedFor(facts.acts, facts.runs);
  const byId = new Map(orders.map((order) => [order.orderId, order]));
  const resolvedSent = new Set(
    facts.acts
      .filter((act) => act.act === 'ops-resolve-sent' && act.result === 'done')
      .map((act) => act.orderId),
  );
  return {
    acts: made.length,
    done: made.filter((act) => act.result === 'done').length,
    perAct,
    resendsAsked: { orders: resends.size, resends: [...resends.values()].reduce((sum, n) => sum + n, 0) },
    stoppedBeforeClaim: stoppedBeforeClaim(facts, orders).size,
    resolvedSentWithoutMessage: [...resolvedSent].filter((orderId) => {
      const order = byId.get(orderId);
      return order?.row?.state === 'sent' && order.row.outcome === 'resolved' && order.messages === 0;
    }).length,
    sweeps: facts.sweeps,
    failures,
  };
}
