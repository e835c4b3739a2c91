// One order's mail, rendered by the shop's templates; the same order, identity and templates give the same bytes.
import type { OrderForMail } from '../db/orders';
import { displayText } from './displayText';
import type { MailView } from './template/mailFields';
import { defaultMailTemplates, type MailTemplates } from './template/mailTemplates';
import type { OutgoingMail } from './types';

export interface MailIdentity {
  from: string;
  replyTo: string | null;
  subject: string;
}

export function confirmationView(order: OrderForMail, identity: MailIdentity): MailView {
  const { currency } = order;
  const items = order.items.map((item) => ({
    name: displayText(item.productName),
    quantity: item.quantity,
    unitPrice: { amountMinor: item.unitAmountMinor, currency },
    subtotal: { amountMinor: item.unitAmountMinor * BigInt(item.quantity), currency },
  }));
  const extra = Object.fromEntries(
    Object.entries(order.extra).map(([name, value]) => [name, displayText(value)]),
  );
  return {
    mail: { subject: identity.subject, repliesWelcome: identity.replyTo !== null },
    order: {
      id: order.orderId,
      customerName: displayText(order.customerName),
      orderedAt: order.orderedAt,
      // The shop's amount, as its contract states it (the demo's view sums its items).
      total: { amountMinor: order.amountMinor, currency },
      extra,
    },
    items,
  };
}

export function renderConfirmationMail(
  order: OrderForMail,
  identity: MailIdentity,
  templates: MailTemplates = defaultMailTemplates(),
): OutgoingMail {
  const parts = templates.render(confirmationView(order, identity));
  return {
    orderId: order.orderId,
    to: order.customerEmail,
    from: identity.from,
    replyTo: identity.replyTo,
    ...parts,
  };
}
