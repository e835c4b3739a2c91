// The 「ご注文ありがとうございます」 mail of one order: the order turned into a view (names on one line, yen
// amounts, the JST date), rendered by the template into a text and an HTML part. Deterministic: the same
// order and identity render the same bytes. The wording and layout live in orderConfirmationTemplate.ts.
import type { OrderForMail } from '../db/orders';
import { displayText } from './displayText';
import { formatJstDateTime, formatYen } from './japaneseFormat';
import {
  renderConfirmationHtml,
  renderConfirmationText,
  type ConfirmationView,
} from './orderConfirmationTemplate';
import type { OutgoingMail } from './types';

export interface MailIdentity {
  from: string;
  replyTo: string | null;
  subject: string;
}

function confirmationView(order: OrderForMail, identity: MailIdentity): ConfirmationView {
  let total = 0n;
  const items = order.items.map((item) => {
    const subtotal = item.unitPriceYen * BigInt(item.quantity);
    total += subtotal;
    return {
      productName: displayText(item.productName),
      quantity: item.quantity,
      unitPrice: formatYen(item.unitPriceYen),
      subtotal: formatYen(subtotal),
    };
  });
  return {
    subject: identity.subject,
    customerName: displayText(order.customerName),
    orderNumber: order.orderId,
    orderedAt: formatJstDateTime(order.orderedAt),
    items,
    total: formatYen(total),
    repliesWelcome: identity.replyTo !== null,
  };
}

export function renderConfirmationMail(order: OrderForMail, identity: MailIdentity): OutgoingMail {
  const view = confirmationView(order, identity);
  return {
    orderId: order.orderId,
    to: order.customerEmail,
    from: identity.from,
    replyTo: identity.replyTo,
    subject: identity.subject,
    text: renderConfirmationText(view),
    html: renderConfirmationHtml(view),
  };
}
