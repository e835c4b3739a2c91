// Hands a message the sandbox accepted to a real inbox (MailDev) over SMTP, so people can look at what a
// customer would have received. Only accepted messages come here: the sandboxes call it after they kept one.

import { createTransport } from 'nodemailer';

export interface RelayTarget {
  host: string;
  port: number;
}

export interface RelayedMessage {
  from: string;
  to: string[];
  /** The whole message, headers and body, as the relay should store it. */
  raw: string;
}

export interface ComposedRelayMessage {
  orderId: string | null;
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string | null;
}

/** Never rejects: a missing inbox must not change what the sandbox answered. Resolves false when it failed. */
export async function relayRawMessage(target: RelayTarget, message: RelayedMessage): Promise<boolean> {
  return sendToInbox(target, { envelope: { from: message.from, to: message.to }, raw: message.raw });
}

/** For the HTTP sandbox, which holds the parts rather than a MIME message. */
export async function relayComposedMessage(
  target: RelayTarget,
  message: ComposedRelayMessage,
): Promise<boolean> {
  return sendToInbox(target, {
    from: message.from,
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html === null ? {} : { html: message.html }),
    headers: message.orderId === null ? {} : { 'X-Order-Id': message.orderId },
  });
}

async function sendToInbox(
  target: RelayTarget,
  mail: Parameters<ReturnType<typeof createTransport>['sendMail']>[0],
): Promise<boolean> {
  // MailDev speaks plain SMTP on loopback: no TLS, no auth.
  // Short deadlines: an inbox that stops answering must not hold the sandbox's relays (and the report) for minutes.
  const transport = createTransport({
    host: target.host,
    port: target.port,
    secure: false,
    ignoreTLS: true,
    connectionTimeout: 5_000,
    greetingTimeout: 5_000,
    socketTimeout: 10_000,
  });
  try {
    await transport.sendMail(mail);
    return true;
  } catch {
    return false;
  } finally {
    transport.close();
  }
}
