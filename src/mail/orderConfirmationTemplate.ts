// THE TEMPLATE of the 「ご注文ありがとうございます」 mail: every word and the layout of both parts live here, so
// an adopter changes the mail in this one file. It receives a ready view (names cleaned to one line, amounts
// and the date already written out, see confirmationMail.ts) and returns strings; nothing here reads a clock,
// the environment or the locale, so the same view always renders the same bytes (snapshot-tested).
//
// Rules for editing: the text part is plain text, interpolate freely. The HTML part must be built with the
// `html` tag only: it escapes every `${value}`, so a product called `<img src=x onerror=alert(1)>` shows as
// those characters instead of becoming markup. Never build HTML by string concatenation.

import { html, type SafeHtml } from './htmlEscape';

export interface ConfirmationItemView {
  productName: string;
  quantity: number;
  unitPrice: string;
  subtotal: string;
}

export interface ConfirmationView {
  subject: string;
  customerName: string;
  orderNumber: string;
  orderedAt: string;
  items: ConfirmationItemView[];
  total: string;
  /** Whether replies reach someone (MAIL_REPLY_TO is set). */
  repliesWelcome: boolean;
}

const CLOSING_WITH_REPLY_TO = 'ご不明な点がございましたら、このメールにご返信ください。';
const CLOSING_NO_REPLY = 'このメールは送信専用のため、ご返信いただいてもお答えできません。';

export function renderConfirmationText(view: ConfirmationView): string {
  const lines = [
    `${view.customerName} 様`,
    '',
    'このたびはご注文いただき、誠にありがとうございます。',
    '以下の内容でご注文を承りました。',
    '',
    `ご注文番号: ${view.orderNumber}`,
    `ご注文日時: ${view.orderedAt}（日本時間）`,
    '',
    '■ ご注文内容',
    ...view.items.flatMap((item) => [
      `・${item.productName}`,
      `    ${item.unitPrice} × ${item.quantity}点 = ${item.subtotal}`,
    ]),
    '',
    `合計: ${view.total}（税込）`,
    '',
    '商品の発送準備が整いしだい、あらためてご連絡いたします。',
    view.repliesWelcome ? CLOSING_WITH_REPLY_TO : CLOSING_NO_REPLY,
  ];
  return lines.join('\n') + '\n';
}

// Inline styles and layout tables: most mail clients ignore <style> blocks and modern CSS layout.
const CELL = 'padding:8px;border-bottom:1px solid #dddddd;';
const NUMBER_CELL = `${CELL}text-align:right;white-space:nowrap;`;

export function renderConfirmationHtml(view: ConfirmationView): string {
  const rows: SafeHtml[] = view.items.map(
    (item) => html`
                <tr>
                  <td style="${CELL}">${item.productName}</td>
                  <td style="${NUMBER_CELL}">${item.unitPrice}</td>
                  <td style="${NUMBER_CELL}">${item.quantity}</td>
                  <td style="${NUMBER_CELL}">${item.subtotal}</td>
                </tr>`,
  );
  const page = html`<!DOCTYPE html>
<html lang="ja">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${view.subject}</title>
</head>
<body style="margin:0;padding:0;background-color:#f4f4f4;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background-color:#f4f4f4;">
  <tr>
    <td align="center" style="padding:24px 8px;">
      <table role="presentation" width="600" cellpadding="0" cellspacing="0" style="max-width:600px;width:100%;background-color:#ffffff;font-family:'Hiragino Sans','Hiragino Kaku Gothic ProN','Noto Sans JP',Meiryo,sans-serif;font-size:15px;line-height:1.7;color:#222222;">
        <tr>
          <td style="padding:24px;">
            <h1 style="margin:0 0 16px;font-size:20px;">ご注文ありがとうございます</h1>
            <p style="margin:0 0 16px;">${view.customerName} 様</p>
            <p style="margin:0 0 16px;">このたびはご注文いただき、誠にありがとうございます。<br>以下の内容でご注文を承りました。</p>
            <table role="presentation" cellpadding="0" cellspacing="0" style="margin:0 0 16px;">
              <tr><th align="left" style="padding:2px 16px 2px 0;">ご注文番号</th><td>${view.orderNumber}</td></tr>
              <tr><th align="left" style="padding:2px 16px 2px 0;">ご注文日時</th><td>${view.orderedAt}（日本時間）</td></tr>
            </table>
            <table width="100%" cellpadding="0" cellspacing="0" style="border-collapse:collapse;margin:0 0 16px;">
              <thead>
                <tr>
                  <th align="left" style="${CELL}">商品名</th>
                  <th align="right" style="${CELL}">単価</th>
                  <th align="right" style="${CELL}">数量</th>
                  <th align="right" style="${CELL}">小計</th>
                </tr>
              </thead>
              <tbody>${rows}
              </tbody>
              <tfoot>
                <tr>
                  <th colspan="3" align="right" style="${CELL}">合計（税込）</th>
                  <td style="${NUMBER_CELL}font-weight:bold;">${view.total}</td>
                </tr>
              </tfoot>
            </table>
            <p style="margin:0 0 8px;">商品の発送準備が整いしだい、あらためてご連絡いたします。</p>
            <p style="margin:0;color:#666666;font-size:13px;">${view.repliesWelcome ? CLOSING_WITH_REPLY_TO : CLOSING_NO_REPLY}</p>
          </td>
        </tr>
      </table>
    </td>
  </tr>
</table>
</body>
</html>
`;
  return page.toString();
}
