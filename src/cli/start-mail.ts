// `npm run start-mail -- <orderId> [<orderId> ...]` (or ids on stdin, one per line): starts each order's
// confirmation mail. Safe to repeat: an order already started is reported, not sent again.
// Exit codes: 0 every id started or already started, 1 a start failed, 2 bad input (nothing started).
// First: refuses an unsupported Node before any other import can fail on it.
import '../nodeGuard';
import { createInterface } from 'node:readline';
import {
  connectOrderMailClient,
  InvalidOrderIdError,
  OrderMailWorkflowIdTakenError,
  parseOrderId,
  startOrderConfirmationMail,
} from '../client';

const USAGE = 'Usage: npm run start-mail -- <orderId> [<orderId> ...]   (or ids on stdin, one per line)';

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

async function main(): Promise<void> {
  const raw = await readIds(process.argv.slice(2));
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
  try {
    for (const id of raw) {
      try {
        const result = await startOrderConfirmationMail(client, id);
        console.log(`${result.orderId}\t${result.status}\trun ${result.runId}`);
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
  if (taken > 0) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(error instanceof InputError ? 2 : 1);
});
