// The demo's inbox (MailDev): started beside the sandbox unless --no-inbox, and read back after the run so the
// report can say whether the inbox holds what the sandbox accepted, order by order. Only MailDev's REST API is
// used (GET /api/email returns the whole inbox), with a deadline like every other call here.
import type { RunningMailDev } from '../devtools/mailDev';

const READ_TIMEOUT_MS = 30_000;

export interface InboxFacts {
  webUrl: string;
  /** Order id (the X-Order-Id header both sandboxes relay) → messages in the inbox. */
  messagesPerOrder: Record<string, number>;
  /** Messages without an X-Order-Id header: none are expected. */
  withoutOrderId: number;
}

export async function readInboxFacts(mailDev: Pick<RunningMailDev, 'webUrl'>): Promise<InboxFacts> {
  const response = await fetch(`${mailDev.webUrl}/api/email`, {
    signal: AbortSignal.timeout(READ_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`the inbox answered ${response.status} to GET /api/email`);
  const entries = (await response.json()) as { headers?: Record<string, unknown> }[];
  const messagesPerOrder: Record<string, number> = {};
  let withoutOrderId = 0;
  for (const entry of entries) {
    const orderId = entry.headers?.['x-order-id'];
    if (typeof orderId === 'string' && orderId !== '') {
      messagesPerOrder[orderId] = (messagesPerOrder[orderId] ?? 0) + 1;
    } else {
      withoutOrderId += 1;
    }
  }
  return { webUrl: mailDev.webUrl, messagesPerOrder, withoutOrderId };
}
