// The 「ご注文ありがとうございます」 mail, as plain text. Deterministic: the same order renders the same bytes.
import type { OrderForMail } from '../db/orders';
import type { OutgoingMail } from './types';

export interface MailIdentity {
  from: string;
  replyTo: string | null;
  subject: string;
}

const yen = new Intl.NumberFormat('ja-JP', { style: 'currency', currency: 'JPY' });
const jstDateTime = new Intl.DateTimeFormat('ja-JP', {
  timeZone: 'Asia/Tokyo',
  year: 'numeric',
  month: 'long',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
});

export function renderConfirmationMail(order: OrderForMail, identity: MailIdentity): OutgoingMail {
  const total = order.items.reduce((sum, item) => sum + item.unitPriceYen * BigInt(item.quantity), 0n);
  const lines = [
    `${order.customerName} 様`,
    '',
    'このたびはご注文いただき、誠にありがとうございます。',
    '以下の内容でご注文を承りました。',
    '',
    `ご注文番号: ${order.orderId}`,
    `ご注文日時: ${jstDateTime.format(order.orderedAt)}（日本時間）`,
    '',
    '■ ご注文内容',
    ...order.items.map(
      (item) =>
        `・${item.productName} × ${item.quantity}  ${yen.format(item.unitPriceYen * BigInt(item.quantity))}`,
    ),
    '',
    `合計: ${yen.format(total)}（税込）`,
    '',
    '商品の発送準備が整いしだい、あらためてご連絡いたします。',
    'このメールは送信専用です。お問い合わせは返信先アドレスまでお願いいたします。',
  ];
  return {
    orderId: order.orderId,
    to: order.customerEmail,
    from: identity.from,
    replyTo: identity.replyTo,
    subject: identity.subject,
    text: lines.join('\n') + '\n',
  };
}
