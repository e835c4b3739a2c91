// Built here so the transport streams it and knows when its final '.' went out (docs/smtp-and-inbox.md).

import MailComposer from 'nodemailer/lib/mail-composer';
import type { OutgoingMail } from '../types';

/** The same on every attempt, so a receiver deduplicating on Message-ID sees one message. */
export function orderConfirmationMessageId(mail: Pick<OutgoingMail, 'orderId' | 'from'>): string {
  const domain = /@([^\s@<>]+)>?\s*$/.exec(mail.from)?.[1] ?? 'localhost';
  return `<order-${mail.orderId}.confirmation@${domain}>`;
}

/** The envelope id (RFC 3461 ENVID) that names the order in `MAIL FROM`, for relays that offer DSN. */
export function orderEnvelopeId(orderId: string): string {
  return `order-${orderId}`;
}

/** The whole message, headers and both parts, as bytes. */
export async function buildSmtpMessage(mail: OutgoingMail): Promise<Buffer> {
  const composer = new MailComposer({
    from: mail.from,
    to: mail.to,
    ...(mail.replyTo === null ? {} : { replyTo: mail.replyTo }),
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: orderConfirmationMessageId(mail),
    headers: { 'X-Order-Id': mail.orderId },
  });
  return composer.compile().build();
}

/** The bare address of a mailbox like `Shop <shop@example.com>`, for the envelope. */
export function envelopeAddress(mailbox: string): string {
  return /<([^<>]+)>\s*$/.exec(mailbox)?.[1] ?? mailbox.trim();
}
