// Which reader checks a signed delivery; null when the provider's key is not configured.
import type { KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { readMailgunDelivery } from './mailgunWebhook';
import type { WebhookProvider } from './normalizedEvent';
import { readSendGridDelivery } from './sendgridWebhook';
import type { DeliveryVerdict } from './signedDelivery';

export interface SignedDeliveryKeys {
  sendgridPublicKey: KeyObject | null;
  mailgunSigningKey: string | null;
  maxAgeMs: number;
  /** The receiver's time of the request, for the timestamp's age. */
  now: Date;
}

export function readSignedDelivery(
  provider: WebhookProvider,
  keys: SignedDeliveryKeys,
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
): DeliveryVerdict | null {
  if (provider === 'ses') return null;
  if (provider === 'sendgrid') {
    if (keys.sendgridPublicKey === null) return null;
    return readSendGridDelivery({
      headers,
      rawBody,
      publicKey: keys.sendgridPublicKey,
      now: keys.now,
      maxAgeMs: keys.maxAgeMs,
    });
  }
  if (keys.mailgunSigningKey === null) return null;
  return readMailgunDelivery({
    rawBody,
    signingKey: keys.mailgunSigningKey,
    now: keys.now,
    maxAgeMs: keys.maxAgeMs,
  });
}
