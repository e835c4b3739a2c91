// What each ending of the mail workflow says to an operator: pure texts from plain values, one per ending kind,
// so the compiler checks that every kind has its text. What the workflow does at an ending: src/workflows/endings.ts.
import { FailureType } from './failures';
import type { LogOutcome, MailOutcome } from './mailOutcome';
import { describeSendOutcome, type SendNotAccepted } from './sendOutcome';

/** A cancel, by what the run was doing or what its attempt left (the workflow's LeftByCancel, and its waits). */
export interface CancelledValues {
  waiting: { when: string };
  'order-not-visible': object;
  released: { attempt: number };
  finished: {
    result: {
      result: 'sent' | 'already-sent' | 'claim-lost';
      outcome: LogOutcome | null;
      attempts: number;
      providerMessageId: string | null;
    };
  };
  'lost-while-held': { result: { attempts: number } };
  'orphan-settled': { attempt: number; settledAs: string | null };
  'orphan-left': { attempt: number };
  'held-at-same-time': { holder: string };
  held: { attempt: number };
  'not-accepted': { attempt: number; recordedOutcome: MailOutcome; sent: SendNotAccepted };
}
export type CancelledKind = keyof CancelledValues;

export const CANCELLED_TEXT: {
  [K in CancelledKind]: (orderId: string, values: CancelledValues[K]) => string;
} = {
  waiting: (orderId, { when }) =>
    `Order ${orderId}: cancelled while waiting to claim again ${when}. Nothing is in flight: the log row ` +
    'is settled as failed, and a reset or npm run ops -- retry sends the mail.',
  'order-not-visible': (orderId) =>
    `Order ${orderId}: cancelled while waiting for the order to become visible. Nothing was claimed or sent ` +
    'and no log row exists; once the order exists, the reconciliation sweep starts its mail again.',
  released: (orderId, { attempt }) =>
    `Order ${orderId}: cancelled while claiming. No request was made; attempt ${attempt} is recorded as ` +
    'failed/not_sent, and a reset or npm run ops -- retry sends the mail.',
  finished: (orderId, { result }) => {
    const what =
      result.result === 'sent'
        ? `the mail had already been dispatched, was waited for and recorded as sent (outcome ${result.outcome}` +
          `${result.providerMessageId === null ? '' : `, message id ${result.providerMessageId}`})`
        : result.result === 'already-sent'
          ? 'the mail was already recorded as sent, and this run sent nothing'
          : 'the log row had been settled by someone else, and this run recorded nothing';
    return `Order ${orderId}: cancelled during attempt ${result.attempts}; ${what}.`;
  },
  'lost-while-held': (orderId, { result }) =>
    `Order ${orderId}: cancelled after attempt ${result.attempts}, which sent nothing, found the row held ` +
    'by an orphan (after a reset). The sweep settles that orphan; then a reset or ' +
    'npm run ops -- retry sends the mail.',
  'orphan-settled': (orderId, { attempt, settledAs }) =>
    `Order ${orderId}: cancelled while settling attempt ${attempt}, which a closed run had sent and ` +
    `never recorded (${settledAs ?? 'settled by someone else meanwhile'}). This run sent nothing; ` +
    'npm run ops -- status shows the row, and a reset or npm run ops -- retry sends the mail if it is owed.',
  'orphan-left': (orderId, { attempt }) =>
    `Order ${orderId}: cancelled while waiting to ask the provider about attempt ${attempt}, which a ` +
    'closed run had sent and never recorded. This run sent nothing and left that attempt as it was: the ' +
    'reconciliation sweep asks the provider and settles it; npm run ops -- status shows the row.',
  'held-at-same-time': (orderId, { holder }) =>
    `Order ${orderId}: cancelled; the row is held by ${holder}, and this run sent nothing.`,
  held: (orderId, { attempt }) =>
    `Order ${orderId}: cancelled while sends were held (npm run ops -- hold): attempt ${attempt} made no ` +
    'request and is recorded as failed/not_sent. After the hold, a reset or npm run ops -- retry sends the mail.',
  'not-accepted': (orderId, { attempt, recordedOutcome, sent }) =>
    `Order ${orderId}: cancelled during attempt ${attempt}, which was waited for and recorded as ` +
    `failed/${recordedOutcome} (${describeSendOutcome(sent)}). Nothing is in flight; a reset ` +
    'or npm run ops -- retry sends the mail.',
};

/** A run that fails, by why. */
export interface FailedValues {
  'order-never-visible': { notFound: string; waitedMs: number };
  permanent: { sent: SendNotAccepted; recordedOutcome: MailOutcome };
  'gave-up': { runAttempts: number; sent: SendNotAccepted };
  'held-at-same-time': { holder: string };
  'held-by-another-workflow': { holder: string };
  'orphans-kept-coming': { settledInARow: number };
  'unexpected-answer': { what: string };
}
export type FailedKind = keyof FailedValues;

export const FAILED_TEXT: { [K in FailedKind]: (orderId: string, values: FailedValues[K]) => string } = {
  'order-never-visible': (_orderId, { notFound, waitedMs }) =>
    `${notFound} Waited ${Math.round(waitedMs / 1000)} s for the order to become visible; nothing ` +
    'was claimed. Once the order exists, the reconciliation sweep starts its mail again.',
  permanent: (orderId, { sent, recordedOutcome }) => {
    const what =
      sent.failureType === FailureType.MailRefused
        ? 'the confirmation mail was refused before sending'
        : recordedOutcome === 'rejected'
          ? 'the mail API rejected the confirmation mail'
          : 'the confirmation mail cannot be sent';
    return `Order ${orderId}: ${what} (${describeSendOutcome(sent)}). Fix the cause, then reset this workflow to send again.`;
  },
  'gave-up': (orderId, { runAttempts, sent }) =>
    `Order ${orderId}: the confirmation mail was not sent after ${runAttempts} attempts of this run ` +
    `(last: ${describeSendOutcome(sent)}). Fix the cause, then reset this workflow to try again.`,
  'held-at-same-time': (orderId, { holder }) =>
    `Order ${orderId}: the mail's row was claimed by another run of this workflow (${holder}) at ` +
    'a time this run cannot tell apart from its own; this run sends nothing. If that run is closed, ' +
    'the reconciliation sweep settles its claim; then retry: npm run ops -- retry.',
  'held-by-another-workflow': (orderId, { holder }) =>
    `Order ${orderId}: the mail is being sent by another workflow (${holder}); this run sends nothing.`,
  'orphans-kept-coming': (orderId, { settledInARow }) =>
    `Order ${orderId}: ${settledInARow} orphans were settled in a row and the row was ` +
    'still not free to claim; this run sends nothing. See npm run ops -- status, then retry.',
  'unexpected-answer': (orderId, { what }) => `Order ${orderId}: ${what}; this run stops here.`,
};

/** The row was already sent when this run claimed it. */
export function alreadySentText(orderId: string, outcome: LogOutcome, attempts: number): string {
  return (
    `Order ${orderId}: the confirmation mail is already recorded as sent (outcome ${outcome}, ` +
    `${attempts} attempt(s)), so this run sent nothing. A sent mail is final for automation: to ` +
    'send it again, an operator resolves it as failed first (npm run ops -- resolve), then retries.'
  );
}

/** Someone else settled the row while this run held it; an accepted mail's id is in its audit row. */
export function claimLostText(orderId: string, providerMessageId: string | null): string {
  const accepted =
    providerMessageId === null
      ? ''
      : ` The provider had accepted this run's mail (message id ${providerMessageId}); that answer is kept in the ` +
        "attempt's audit row.";
  return (
    `Order ${orderId}: the mail's log row was settled by someone else (an operator's resolve) while this run ` +
    `held it, so this run did not change it.${accepted} The log row, its attempts and its operator acts say what happened.`
  );
}
