// The demo's inbox (MailDev): started beside the sandbox unless --no-inbox, and read back after the run so the
// report can say whether the inbox holds what the sandbox accepted, order by order. Only MailDev's REST API is
// used (GET /api/email returns the whole inbox). Nothing here may cost the run its report: a relay that does
// not finish is waited for only so long, and an inbox that cannot be read becomes a failed invariant.
import type { RunningMailDev } from '../../devtools/mailDev';
import { isWitnessProbe } from '../verificationTarget';
import type { InboxFacts } from './facts';

const RELAYS_SETTLE_MS = 30_000;
const READ_TIMEOUT_MS = 30_000;

/** Waits for the relays started so far (bounded), then reads the whole inbox. Never rejects. */
export async function readInboxFacts(
  mailDev: Pick<RunningMailDev, 'webUrl'>,
  relaysSettled: () => Promise<void>,
): Promise<InboxFacts> {
  const facts: InboxFacts = {
    webUrl: mailDev.webUrl,
    messagesPerOrder: {},
    withoutOrderId: 0,
    unreadable: null,
  };
  // A relay still on its way would show as a mail missing from the inbox; one stuck for good shows as that.
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    relaysSettled().catch(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, RELAYS_SETTLE_MS))),
  ]);
  clearTimeout(timer);
  try {
    const response = await fetch(`${mailDev.webUrl}/api/email`, {
      signal: AbortSignal.timeout(READ_TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`it answered ${response.status} to GET /api/email`);
    const entries = (await response.json()) as { headers?: Record<string, unknown> }[];
    for (const entry of entries) {
      const orderId = entry.headers?.['x-order-id'];
      // A witness probe went to the shop's sink, not to a customer: not the inbox's business here.
      if (isWitnessProbe(typeof orderId === 'string' ? orderId : null)) continue;
      if (typeof orderId === 'string' && orderId !== '') {
        facts.messagesPerOrder[orderId] = (facts.messagesPerOrder[orderId] ?? 0) + 1;
      } else {
        facts.withoutOrderId += 1;
      }
    }
  } catch (error) {
    facts.unreadable = `the inbox could not be read: ${error instanceof Error ? error.message : String(error)}`;
  }
  return facts;
}
