import type { SendResult } from '../shared/mailOutcome';

/** One rendered mail, ready for a transport. Holds personal data: never put it in workflow history or logs. */
export interface OutgoingMail {
  /** The order this mail confirms; providers get it as metadata so a message can be traced back. */
  orderId: string;
  to: string;
  from: string;
  replyTo: string | null;
  subject: string;
  /** The plain-text part. */
  text: string;
  /** The HTML part, every interpolated value already escaped (src/mail/orderConfirmationTemplate.ts). */
  html: string;
}

/**
 * Sends one mail and classifies what happened. It never throws for anything the network or the provider did:
 * every such event becomes a SendResult. It throws only for programming errors.
 */
export interface MailTransport {
  send(mail: OutgoingMail): Promise<SendResult>;
  close(): Promise<void>;
}
