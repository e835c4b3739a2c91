// The plain loop: claim → POST → record, with no Temporal, over the SAME statements (src/db/orderMailClaim.ts,
// src/activities/dispatchFence.ts, src/db/orderMailRecord.ts, src/db/orders.ts) and the SAME mail client
// (src/mail's HTTP transport and generic adapter) as the product's activities. It is what the case study's
// redesign (docs/design.md §1) costs on this machine without Temporal: what exactly-once via Temporal is
// compared against.
import { randomUUID } from 'node:crypto';
import { nowMs } from '../clock';
import { markDispatched } from '../../../src/activities/dispatchFence';
import { claimOrderMailRow } from '../../../src/db/orderMailClaim';
import { recordOutcome } from '../../../src/db/orderMailRecord';
import { loadOrderForMail } from '../../../src/db/orders';
import type { Database } from '../../../src/db/pool';
import { renderConfirmationMail, type MailIdentity } from '../../../src/mail/confirmationMail';
import type { MailTransport } from '../../../src/mail/types';

export interface PlainLoopDependencies {
  db: Database;
  mail: MailTransport;
  mailIdentity: MailIdentity;
  recordedBy: string;
}

const runId = randomUUID();

/** One order, start to recorded row. Returns the outcome the row got. */
export async function processOrder(deps: PlainLoopDependencies, orderId: string): Promise<string> {
  const claimToken = `plain/${orderId}/${runId}`;
  const claim = await claimOrderMailRow(deps.db, {
    orderId,
    claimToken,
    workflowScope: `plain/${orderId}/`,
    issuedAt: new Date(),
    policy: 'assume-sent',
    idempotency: null,
    sendTimeoutMs: 0,
    recordedBy: deps.recordedBy,
  });
  if (claim.kind !== 'claimed' || claim.how !== 'first-claim') return 'already-claimed';
  const { attempt } = claim;
  const order = await loadOrderForMail(deps.db, orderId);
  if (order === null) throw new Error(`order ${orderId} not found`);
  const mail = renderConfirmationMail(order, deps.mailIdentity);
  const fence = await markDispatched(deps.db, {
    orderId,
    claimToken,
    attempt,
    dispatch: {
      destination: deps.mail.destination ?? null,
      sendKey: `bench/${orderId}`,
      sendTimeoutMs: 60_000,
    },
  });
  if (fence !== 'dispatched') return fence;
  const result = await deps.mail.send(mail);
  const accepted = result.outcome === 'accepted';
  await recordOutcome(deps.db, {
    orderId,
    claimToken,
    attempt,
    state: accepted ? 'sent' : 'failed',
    outcome: result.outcome,
    unknownPolicy: null,
    providerMessageId: accepted ? result.providerMessageId : null,
    httpStatus: result.httpStatus,
    error: accepted ? null : result.reason,
    recordedBy: deps.recordedBy,
    expectDispatched: null,
  });
  return result.outcome;
}

/** Closed loop: `concurrency` loops take the next order until the time is up or the orders run out. */
export async function runClosedLoop(
  deps: PlainLoopDependencies,
  orderIds: string[],
  concurrency: number,
  durationMs: number,
): Promise<{ starts: [string, number][]; stoppedAtMs: number }> {
  const starts: [string, number][] = [];
  const deadline = performance.now() + durationMs;
  let next = 0;
  let stoppedAtMs = 0;
  const loop = async (): Promise<void> => {
    while (next < orderIds.length && performance.now() < deadline) {
      const orderId = orderIds[next++]!;
      starts.push([orderId, nowMs()]);
      await processOrder(deps, orderId);
    }
    stoppedAtMs ||= nowMs();
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { starts, stoppedAtMs };
}

/**
 * Open loop: order i becomes due at t0 + i/rate, whatever happened before it; `concurrency` consumers take
 * due orders in order. Latency counts from the due time, so a backlog shows up in it (no coordinated omission).
 */
export async function runOpenLoop(
  deps: PlainLoopDependencies,
  orderIds: string[],
  t0Ms: number,
  ratePerSecond: number,
  concurrency: number,
): Promise<void> {
  const intervalMs = 1000 / ratePerSecond;
  let released = 0;
  let taken = 0;
  let waiting: (() => void)[] = [];
  const releaser = async (): Promise<void> => {
    while (released < orderIds.length) {
      const dueIn = t0Ms + released * intervalMs - nowMs();
      if (dueIn > 0) await sleep(dueIn);
      const now = nowMs();
      while (released < orderIds.length && t0Ms + released * intervalMs <= now) released++;
      const woken = waiting;
      waiting = [];
      for (const wake of woken) wake();
    }
  };
  const consumer = async (): Promise<void> => {
    while (taken < orderIds.length) {
      if (taken >= released) {
        await new Promise<void>((resolve) => waiting.push(resolve));
        continue;
      }
      await processOrder(deps, orderIds[taken++]!);
    }
  };
  await Promise.all([releaser(), ...Array.from({ length: concurrency }, consumer)]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
