// The sweep's second look (docs/design.md, "The second look"), run by its first batch.
import { activityInfo, heartbeat, log } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { RESTARTED_BY_MEMO } from '../client';
import { judgePolicyDuplicate } from '../evidence/evidenceRules';
import {
  findPolicyResends,
  findReopenedNotClaimed,
  recordPolicyResendLook,
  type PolicyResend,
  findSecondLookCandidates,
  type SecondLookCandidate,
  type SecondLookCursor,
} from '../db/secondLook';
import { reopenAfterSecondLook, secondLookFound } from '../mailRow/statements';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import { ORDER_MAIL_ATTRIBUTES_AT_START, ORDER_MAIL_WORKFLOW_TYPE } from '../shared/workflowContract';
import { verifiersOf } from './dependencies';
import type { SweepDependencies, SecondLookMail } from './sweepTypes';
import { judgeDispatchedAttempt, type VerifyOrderMailResult } from './verifyOrderMail';

/** What one sweep's second look did. */
export interface SecondLookResult {
  asked: number;
  reopened: string[];
  found: number;
  /** Asked, but nothing decided yet (no witness, a failing lookup): asked again by a later sweep. */
  undecided: number;
  /** Reopened rows whose mail was started (again) by this sweep. */
  started: number;
  /** Under assume-failed: re-sent attempts whose first request the lookup shows the provider took. */
  policyDuplicates: string[];
}

/** Candidates asked about together; a page of the keyset. */
const PAGE = 10;
/** Candidates one sweep asks about at most; the rest (newer ones, which leave the window later) wait. */
const MAX_ASKS_PER_SWEEP = 30;
/** The share of the sweep activity's timeout the second look may use: the missed orders (G3) come after it. */
const SHARE_OF_ACTIVITY_TIMEOUT = 0.4;
/** The memo on a run the second look started: the Web UI shows why the order was mailed late. */
export const SECOND_LOOK_STARTED_BY = 'second look (the provider proved the first request never reached it)';

/** One lookup of the dual at most; the lookup client's own timeout is normally far shorter. */
const LOOKUP_DEADLINE_MS = 30_000;

export const DEFAULT_SECOND_LOOK_MAX_LATE_MS = 24 * 3_600_000;

export function createSecondLook(deps: SweepDependencies, mail: SecondLookMail) {
  return async function secondLookAtAssumedSent(): Promise<SecondLookResult> {
    const result: SecondLookResult = {
      asked: 0,
      reopened: [],
      found: 0,
      undecided: 0,
      started: 0,
      policyDuplicates: [],
    };
    const maxLateMs = deps.settings.secondLookMaxLateMs ?? DEFAULT_SECOND_LOOK_MAX_LATE_MS;
    if (maxLateMs === 0) return result;
    const metrics = deps.metrics ?? noOrderMailMetrics;
    const recordedBy = mail.workerIdentity;
    const stopPagingAt = Date.now() + activityInfo().startToCloseTimeoutMs * SHARE_OF_ACTIVITY_TIMEOUT;
    // One provider at a time: each its own window (half its lookup retention), asked by its own verifier.
    for (const verifier of verifiersOf(mail)) {
      const lookup = verifier.lookup;
      if (lookup === null || verifier.retentionMs === null) continue;
      const provider = verifier.destination.provider;
      const boundMs = Math.min(Math.floor(verifier.retentionMs / 2), maxLateMs);
      let after: SecondLookCursor | null = null;
      while (result.asked < MAX_ASKS_PER_SWEEP && Date.now() < stopPagingAt) {
        const page: SecondLookCandidate[] = await findSecondLookCandidates(deps.db, {
          provider,
          boundMs,
          after,
          limit: Math.min(PAGE, MAX_ASKS_PER_SWEEP - result.asked),
        });
        if (page.length === 0) break;
        after = page.at(-1)!.cursor;
        result.asked += page.length;
        const answers = await Promise.all(page.map((candidate) => ask(candidate)));
        for (const [index, answer] of answers.entries()) {
          const candidate = page[index]!;
          if (answer.kind === 'not-found') {
            const note =
              `second look: the provider's lookup, asked again ${Math.round(answer.sinceDispatchMs / 1000)} s ` +
              'after the request, shows with a witness that it never took it; the assume-sent policy had ' +
              'recorded it as sent without evidence. Reopened (once) so the order is mailed now.';
            if (await reopenAfterSecondLook(deps.db, candidate, { boundMs, note, recordedBy })) {
              result.reopened.push(candidate.orderId);
              metrics.secondLookDone(provider, 'reopened');
              log.warn('Second look: a mail recorded as sent was never taken by the provider; reopened', {
                orderId: candidate.orderId,
                attempt: candidate.attempts,
              });
            }
          } else if (answer.kind === 'found') {
            const note = `second look: the provider has this request (${answer.via}); it stays sent`;
            const looked = await secondLookFound(deps.db, candidate, {
              boundMs,
              providerMessageId: answer.providerMessageId,
              note,
              recordedBy,
            });
            if (looked) {
              result.found += 1;
              metrics.secondLookDone(provider, 'found');
            }
          } else {
            result.undecided += 1;
          }
        }
        heartbeat();
        if (page.length < PAGE) break;
      }
      // The dual, under assume-failed: whether the first request of a re-sent attempt was taken too.
      if (result.asked < MAX_ASKS_PER_SWEEP && Date.now() < stopPagingAt) {
        const resends = await findPolicyResends(deps.db, {
          provider,
          boundMs,
          limit: Math.min(PAGE, MAX_ASKS_PER_SWEEP - result.asked),
        });
        result.asked += resends.length;
        const timing = {
          settleDelayMs: verifier.settleDelayMs,
          retentionMs: verifier.retentionMs,
          fallbackSendTimeoutMs: mail.settings.sendTimeoutMs,
        };
        await Promise.all(
          resends.map(async (resend: PolicyResend) => {
            const answer = await lookup.lookUp(
              {
                orderId: resend.orderId,
                sendKey: resend.resend.sendKey,
                destination: resend.resend.destination!,
              },
              AbortSignal.timeout(LOOKUP_DEADLINE_MS),
            );
            if (answer.kind === 'failed') return;
            const verdict = judgePolicyDuplicate({
              resend: resend.resend,
              asking: verifier.destination,
              answer,
              now: resend.now,
              timing,
            });
            if (verdict.kind === 'undecided') return;
            const duplicate = verdict.kind === 'duplicate';
            const note = duplicate
              ? 'asked again: the provider took this request too, and the assume-failed policy sent the mail again: the customer got two'
              : 'asked again: the provider has only the re-send of this key, so this request was not taken';
            const recorded = await recordPolicyResendLook(deps.db, {
              orderId: resend.orderId,
              attempt: resend.attempt,
              duplicate,
              note,
              recordedBy,
            });
            if (recorded && duplicate) {
              result.policyDuplicates.push(resend.orderId);
              metrics.policyDuplicateShown(provider);
              log.warn(
                'The assume-failed policy sent a mail twice: the provider had taken the first request',
                {
                  orderId: resend.orderId,
                  attempt: resend.attempt,
                },
              );
            }
          }),
        );
        heartbeat();
      }
    }
    // Every reopened row no claim took yet, including starts an earlier sweep lost; starting is idempotent.
    for (const orderId of await findReopenedNotClaimed(deps.db, MAX_ASKS_PER_SWEEP)) {
      if (await startAgain(deps.temporal, orderId)) result.started += 1;
      heartbeat();
    }
    return result;

    async function ask(candidate: SecondLookCandidate): Promise<VerifyOrderMailResult> {
      try {
        return await judgeDispatchedAttempt({ ...mail, db: deps.db }, candidate.read, {
          orderId: candidate.orderId,
          claimToken: candidate.claimToken,
          attempt: candidate.attempts,
          sendKey: candidate.read.recordedSendKey,
        });
      } catch (error) {
        // A failing lookup decides nothing: the next sweep asks again, within the window.
        return { kind: 'inconclusive', reason: error instanceof Error ? error.message : String(error) };
      }
    }
  };
}

/** Starts the mail again after a reopen (ALLOW_DUPLICATE); an open run claims the failed row itself. */
async function startAgain(client: Client, orderId: string): Promise<boolean> {
  try {
    await client.workflow.start(ORDER_MAIL_WORKFLOW_TYPE, {
      workflowId: orderId,
      taskQueue: activityInfo().taskQueue,
      args: [orderId],
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      workflowIdConflictPolicy: 'FAIL',
      typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
      memo: { [RESTARTED_BY_MEMO]: SECOND_LOOK_STARTED_BY },
    });
    return true;
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw error;
  }
}
