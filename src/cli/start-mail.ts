// `npm run start-mail -- <orderId> [<orderId> ...]` (or ids on stdin, one per line): starts each order's
// confirmation mail. Safe to repeat: an order already started is reported, not sent again.
// Exit codes: EXIT below (0 started or running/completed, 1 a start failed or Temporal unreachable, 2 bad input,
// 3 an order's run closed without a mail).
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { createInterface } from 'node:readline';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  connectOrderMailClient,
  InvalidOrderIdError,
  OrderMailWorkflowIdTakenError,
  parseOrderId,
  startOrderConfirmationMail,
} from '../client';
import { FailureType } from '../shared/failures';

const EXIT = {
  ok: 0,
  /** A start failed: Temporal unreachable, or the order's id held by another workflow type. */
  startFailed: 1,
  /** Bad input: nothing was started. */
  badInput: 2,
  /** An order's run had already closed without sending its mail (failed, terminated, cancelled, timed out). */
  closedWithoutMail: 3,
} as const;

// A run that completed settled the mail (sent, already sent, or an operator's resolve); any other closed run
// sent nothing, and a start never starts it again: an operator looks, then retries.
const CLOSED_WITHOUT_MAIL = new Set(['FAILED', 'TERMINATED', 'CANCELLED', 'TIMED_OUT']);

const USAGE = `Usage: npm run start-mail -- <orderId> [<orderId> ...]   (or ids on stdin, one per line)
Starts each order's confirmation mail; an order already started is reported, never sent again.
Exit codes: ${EXIT.ok} every order started, running or completed; ${EXIT.startFailed} a start failed (Temporal \
unreachable, id held by another workflow type); ${EXIT.badInput} bad input, nothing started; \
${EXIT.closedWithoutMail} an order's run closed without a mail (see npm run ops -- status <orderId>).`;

/** Bad input: nothing was started. */
class InputError extends Error {
  override readonly name = 'InputError';
}

async function readIds(args: string[]): Promise<string[]> {
  if (args.length > 0) return args;
  if (process.stdin.isTTY) throw new InputError(USAGE);
  const ids: string[] = [];
  for await (const line of createInterface({ input: process.stdin })) if (line.trim()) ids.push(line.trim());
  // An empty list in a cron job is an empty export or a broken pipe, not "nothing to do": say so.
  if (ids.length === 0)
    throw new InputError(`No order id on stdin (it was empty or only blank lines).\n${USAGE}`);
  return ids;
}

/** What helps next for a run that closed without a mail; a run that never saw its order gets its own answer. */
async function closedWithoutMailHint(
  client: Client,
  orderId: string,
  runId: string,
  runStatus: string,
): Promise<string> {
  const retry = `npm run ops -- retry ${orderId} --reason "…"`;
  if (runStatus === 'FAILED' && (await failureTypeOf(client, orderId, runId)) === FailureType.OrderNotFound) {
    return (
      `Order ${orderId}: its run ${runId} ended OrderNotFound: the order was not visible within the run's wait, ` +
      'so nothing was claimed or sent, and a start never starts that run again. Once the order exists, the ' +
      'reconciliation sweep starts its mail (at its first run once the order is RECONCILE_GRACE_MS old); to ' +
      `send it right away: ` +
      `${retry}. A mistaken id needs nothing.`
    );
  }
  return (
    `Order ${orderId}: its run ${runId} closed ${runStatus} without sending the mail, and a start never starts ` +
    `it again. See why: npm run ops -- status ${orderId} (and the run in the Web UI). Once the cause is fixed: ` +
    `${retry}. A run that closed before its first claim is started again by the reconciliation sweep.`
  );
}

/** The type of the failure a failed run ended with, or null when it cannot be read. */
async function failureTypeOf(client: Client, orderId: string, runId: string): Promise<string | null> {
  try {
    await client.workflow.getHandle(orderId, runId, { followRuns: false }).result();
    return null;
  } catch (error) {
    return error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure
      ? (error.cause.type ?? null)
      : null;
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(USAGE);
    return;
  }
  const raw = await readIds(args);
  // Validate everything before starting anything, so a typo in the middle leaves nothing half-done.
  const invalid = raw.flatMap((id) => {
    try {
      parseOrderId(id);
      return [];
    } catch (error) {
      return [error instanceof InvalidOrderIdError ? error.message : String(error)];
    }
  });
  if (invalid.length > 0) throw new InputError(`Nothing started:\n  ${invalid.join('\n  ')}`);

  const client = await connectOrderMailClient();
  let taken = 0;
  let closedWithoutMail = 0;
  try {
    for (const id of raw) {
      try {
        const result = await startOrderConfirmationMail(client, id);
        if (result.status === 'already-started') {
          console.log(`${result.orderId}\t${result.status}\trun ${result.runId}\t${result.runStatus}`);
          if (CLOSED_WITHOUT_MAIL.has(result.runStatus)) {
            closedWithoutMail += 1;
            console.error(
              await closedWithoutMailHint(client, result.orderId, result.runId, result.runStatus),
            );
          }
        } else {
          console.log(`${result.orderId}\t${result.status}\trun ${result.runId}`);
        }
      } catch (error) {
        // One order's id held by another workflow type says nothing about the others: go on, fail at the end.
        if (!(error instanceof OrderMailWorkflowIdTakenError)) throw error;
        taken += 1;
        console.log(`${error.workflowId}\tnot-started\tid held by ${error.workflowType} run ${error.runId}`);
        console.error(error.message);
      }
    }
  } finally {
    await client.connection.close();
  }
  if (taken > 0) process.exitCode = EXIT.startFailed;
  else if (closedWithoutMail > 0) process.exitCode = EXIT.closedWithoutMail;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(error instanceof InputError ? EXIT.badInput : EXIT.startFailed);
});
