// The claim: read the row → decideClaim (src/mailRow/decide.ts) → run the one statement it names → repeat.
// Its inputs are a contract (the token from the activity's context, the workflow's issue time, no worker
// clock): docs/design.md §4 rule 3.
import type { EarlierAttempt, NoProviderChoice, ProviderChoice } from '../shared/providerChoice';
import { chooseProvider } from '../shared/providerChoice';
import {
  afterTransition,
  decideClaim,
  type ClaimDecision,
  type ClaimFacts,
  type ClaimObserver,
  type ClaimRequest,
  type ClaimTransition,
  type NeededFact,
  type UnknownUnderKey,
} from '../mailRow/decide';
import {
  firstClaim,
  reclaimFailed,
  settleDispatchedOrphan,
  settleDeferredUnknown,
  takeOverUndispatched,
} from '../mailRow/statements';
import {
  readMailLog,
  timeSinceAttemptDispatch,
  timeSinceKeyFirstDispatch,
  type MailLogRow,
} from './orderMailLog';
import type { Database } from './pool';
import { readProviderStandings } from './providerHealth';
import { runSql, sql } from './sql';

const NO_OBSERVER: ClaimObserver = { settled: () => undefined, rowChanged: () => undefined };

// A concurrent change makes a statement change nothing and the next pass read again; an orphan's
// settlement and the claim take three passes, the rest covers races.
export const MAX_CLAIM_PASSES = 8;

export class ClaimNotSettledError extends Error {
  override readonly name = 'ClaimNotSettledError';
  readonly code = 'ERR_CLAIM_NOT_SETTLED';
}

/**
 * Claims the order's mail for `request.claimToken`, or says why not; ClaimNotSettledError after
 * MAX_CLAIM_PASSES.
 */
export async function claimOrderMailRow(
  db: Database,
  request: ClaimRequest,
  observer: ClaimObserver = NO_OBSERVER,
): Promise<ClaimDecision> {
  for (let pass = 0; pass < MAX_CLAIM_PASSES; pass++) {
    // Most orders are claimed once: the first pass tries the insert before reading anything.
    const row = pass === 0 ? 'unread' : await readMailLog(db, request.orderId);
    const facts: ClaimFacts = {};
    let step = decideClaim(row, request, facts);
    while (step.kind === 'need') {
      await lookUp(db, request, row === 'unread' ? null : row, step, facts);
      step = decideClaim(row, request, facts);
    }
    if (step.kind === 'answer') return step.answer;
    if (step.kind === 'read-again') {
      observer.rowChanged();
      continue;
    }
    const result = await runTransition(db, request, row, step.transition);
    if (result === 'order-not-found') return { kind: 'order-not-found' };
    const after = afterTransition(step.transition, result, row);
    if (after !== 'read-again') return after;
    const { transition } = step;
    if (result.applied && row !== 'unread' && row !== null) {
      if (transition.name === 'settleDeferredUnknown' || transition.name === 'settleDispatchedOrphan') {
        const attempt = transition.name === 'settleDeferredUnknown' ? row.attempts + 1 : row.attempts;
        observer.settled({ attempt, holder: row.claimToken, decision: transition.decision });
      }
    } else if (pass > 0) observer.rowChanged();
  }
  throw new ClaimNotSettledError(
    `Could not settle the claim of order ${request.orderId} after ${MAX_CLAIM_PASSES} passes; retrying.`,
  );
}

/** Reads the one fact decideClaim asked for into `facts`. */
async function lookUp(
  db: Database,
  request: ClaimRequest,
  row: MailLogRow | null,
  need: NeededFact,
  facts: ClaimFacts,
): Promise<void> {
  switch (need.fact) {
    case 'provider-choice': {
      const earlier = need.readEarlier && row !== null ? await earlierAttempts(db, row) : [];
      facts.providerChoice = await choose(
        db,
        request,
        need.leftBehind ? [...earlier, need.leftBehind] : earlier,
      );
      return;
    }
    case 'unknown-under-key':
      facts.unknownUnderKey = row === null ? null : await unknownUnderKey(db, row);
      return;
    case 'since-key-first-dispatch':
      facts.sinceKeyFirstDispatchMs = await timeSinceKeyFirstDispatch(db, request.orderId);
      return;
    case 'since-attempt-dispatch':
      facts.sinceAttemptDispatchMs =
        row === null
          ? null
          : await timeSinceAttemptDispatch(db, {
              orderId: request.orderId,
              claimToken: row.claimToken,
              attempt: row.attempts,
            });
      return;
  }
}

/** Runs the transition's one statement: applied (with the attempt it claimed), or the fence refused it. */
async function runTransition(
  db: Database,
  request: ClaimRequest,
  row: MailLogRow | null | 'unread',
  transition: ClaimTransition,
): Promise<{ applied: false } | { applied: true; attempt: number } | 'order-not-found'> {
  const claimer = {
    claimToken: request.claimToken,
    issuedAt: request.issuedAt,
    recordedBy: request.recordedBy,
  };
  const attempted = (attempt: number | null) =>
    attempt === null ? { applied: false as const } : { applied: true as const, attempt };
  if (transition.name === 'firstClaim' || row === 'unread' || row === null) {
    if (transition.name !== 'firstClaim') return { applied: false };
    const inserted = await firstClaim(db, request.orderId, { ...claimer, ...transition.claimed });
    // The order is not in the contract's view: nothing was written, nothing will be sent.
    if (inserted === 'order-not-found') return 'order-not-found';
    return attempted(inserted === 'inserted' ? 1 : null);
  }
  switch (transition.name) {
    case 'reclaimFailed':
      return attempted(await reclaimFailed(db, row, { ...claimer, ...transition.claimed }));
    case 'takeOverUndispatched': {
      const { note } = transition;
      return attempted(await takeOverUndispatched(db, row, { ...claimer, ...transition.claimed, note }));
    }
    case 'settleDeferredUnknown': {
      const { decision, dispatchedAt, note, orphanNote } = transition;
      const settled = await settleDeferredUnknown(db, row, {
        ...claimer,
        decision,
        dispatchedAt,
        note,
        orphanNote,
      });
      return attempted(settled ? row.attempts + 1 : null);
    }
    case 'settleDispatchedOrphan': {
      const { decision, note } = transition;
      const settled = await settleDispatchedOrphan(db, row, { ...claimer, decision, note });
      return attempted(settled ? row.attempts : null);
    }
  }
}

/**
 * Failover's answer for the attempt about to be claimed; the transition's fence also fences the audit rows
 * it was chosen from (docs/design.md "Failover").
 */
async function choose(
  db: Database,
  request: ClaimRequest,
  earlier: EarlierAttempt[],
): Promise<ProviderChoice | NoProviderChoice> {
  const configured = request.providers ?? [];
  const draining = request.draining ?? [];
  // With one provider taking new attempts or none the rule has no choice to make: the health would be read
  // for nothing.
  const choosable = configured.filter((provider) => !draining.includes(provider)).length;
  const standings = choosable < 2 ? [] : await readProviderStandings(db);
  return chooseProvider({ configured, draining, earlier, standings });
}

/** The order's finished attempts under the row's current key, with the provider each went to. */
async function earlierAttempts(db: Database, row: MailLogRow): Promise<EarlierAttempt[]> {
  const { rows } = await runSql<EarlierAttempt>(
    db,
    sql`SELECT attempt, provider, outcome FROM order_mail_attempts
         WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount}
         ORDER BY attempt`,
  );
  return rows;
}

/** The latest unknown under the row's key (was it left for a retry under the key?) and its first request. */
async function unknownUnderKey(db: Database, row: MailLogRow): Promise<UnknownUnderKey | null> {
  const { rows } = await runSql<{ unknownPolicy: string | null; firstDispatchedAt: Date }>(
    db,
    sql`SELECT latest.unknown_policy AS "unknownPolicy",
               (SELECT min(dispatched_at) FROM order_mail_attempts
                 WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount} AND outcome = 'unknown')
               AS "firstDispatchedAt"
          FROM (SELECT unknown_policy FROM order_mail_attempts
                 WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount} AND outcome = 'unknown'
                 ORDER BY attempt DESC LIMIT 1) AS latest`,
  );
  return rows[0] ?? null;
}
