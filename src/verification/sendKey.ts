// The value a send carries so that the provider can be asked about it afterwards: Postmark metadata, Mailgun's
// Message-Id and user variable, SendGrid's custom argument, the generic API's metadata. It is the send's
// idempotency key (src/mail/idempotencyKey.ts), handed to the mail by the claim: the same for every automatic
// attempt, so a lookup finds whichever attempt got through, and new for an operator's deliberate re-send, so a
// lookup after a re-send is not fooled by the earlier send's message.
import { DEFAULT_DEPLOYMENT_ID } from '../evidence/messageIdentity';
import { orderConfirmationIdempotencyKey } from '../mail/idempotencyKey';
import type { OutgoingMail } from '../mail/types';

/** The mail's send key; a mail built without one (a tool, a test) gets the key of the order's first send. */
export function sendKeyOf(mail: Pick<OutgoingMail, 'orderId' | 'idempotencyKey'>): string {
  return mail.idempotencyKey ?? orderConfirmationIdempotencyKey(DEFAULT_DEPLOYMENT_ID, mail.orderId, 0);
}
