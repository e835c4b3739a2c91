// The value a send carries so the provider can be asked about it later: docs/providers.md, "The send key".
import { DEFAULT_DEPLOYMENT_ID } from '../evidence/messageIdentity';
import { orderConfirmationSendKey } from '../mail/sendKey';
import type { OutgoingMail } from '../mail/types';

/** The mail's send key; a mail built without one (a tool, a test) gets the key of the order's first send. */
export function sendKeyOf(mail: Pick<OutgoingMail, 'orderId' | 'sendKey'>): string {
  return mail.sendKey ?? orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, mail.orderId, 0);
}
