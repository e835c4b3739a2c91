// How large one mail may get, and why (200,000 items once rendered about 100 MB): docs/providers.md, "The mail".
import type { OutgoingMail } from './types';

export interface MailSizeLimits {
  /** Items of one order; checked in the query that loads them, so no more than this + 1 are ever read. */
  maxOrderItems: number;
  /** Bytes (UTF-8) of the rendered subject, text and HTML parts together. */
  maxRenderedBytes: number;
}

/** 1,000 items render to about 0.6 MB; 1 MB leaves room for long names and stays far under every provider's limit. */
export const DEFAULT_MAIL_SIZE_LIMITS: MailSizeLimits = { maxOrderItems: 1_000, maxRenderedBytes: 1_000_000 };

export function renderedBytes(mail: Pick<OutgoingMail, 'subject' | 'text' | 'html'>): number {
  return Buffer.byteLength(mail.subject) + Buffer.byteLength(mail.text) + Buffer.byteLength(mail.html);
}
