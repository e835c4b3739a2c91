// What the verify activity asks with; built once per worker by src/worker.ts, closed on shutdown.
import type { SendDestination } from '../evidence/destination';
import type { WitnessOrdering } from '../evidence/freshnessCheck';
import type { MailApiConfig } from '../mail/createMailTransport';
import { createProviderAdapter, destinationOfMailConfig } from '../mail/createMailTransport';
import type { WebhookProvider } from '../webhooks/normalizedEvent';
import { createLookupClient, createLookupPool, type LookupClient } from './lookupClient';
import type { VerificationConfig } from './verificationConfig';

export interface Verifier {
  /** Null for a provider that is verified by webhook only (SendGrid). */
  lookup: LookupClient | null;
  /** Whose webhook events in order_mail_provider_events count as evidence; null for none. */
  webhookProvider: WebhookProvider | null;
  settleDelayMs: number;
  retentionMs: number | null;
  /** What order of its lookup a freshness witness assumes (the provider's facts, with its settle delay). */
  witnessOrdering: WitnessOrdering;
  /** Where this worker's lookup can ask; an attempt that went elsewhere cannot be asked about. */
  destination: SendDestination;
}

export function createVerifier(
  config: VerificationConfig,
  mailApi: MailApiConfig,
): { verifier: Verifier; close(): Promise<void> } {
  const lookupAdapter = config.facts.lookup ? createProviderAdapter(mailApi).lookup : undefined;
  const pool =
    lookupAdapter === undefined
      ? null
      : createLookupPool(mailApi.baseUrl, {
          connections: config.connections,
          connectTimeoutMs: mailApi.connectTimeoutMs,
          timeoutMs: config.lookupTimeoutMs,
        });
  return {
    verifier: {
      lookup:
        lookupAdapter === undefined || pool === null
          ? null
          : createLookupClient({
              adapter: lookupAdapter,
              baseUrl: mailApi.baseUrl,
              dispatcher: pool,
              timeoutMs: config.lookupTimeoutMs,
            }),
      webhookProvider: config.facts.webhook,
      settleDelayMs: config.settleDelayMs,
      retentionMs: config.retentionMs,
      witnessOrdering: witnessOrderingOf(config),
      destination: destinationOfMailConfig(mailApi),
    },
    close: async () => {
      await pool?.close();
    },
  };
}

/** Mailgun's threshold is the settle delay: its default and its floor (without a stated reason) are Mailgun's. */
export function witnessOrderingOf(
  config: Pick<VerificationConfig, 'facts' | 'settleDelayMs'>,
): WitnessOrdering {
  switch (config.facts.witnessOrdering) {
    case 'trusted-after-settle-delay':
      return { kind: 'trusted-after', afterMs: config.settleDelayMs };
    case 'watermark':
      return { kind: 'watermark' };
    case 'taken-order':
      return { kind: 'taken-order' };
  }
}
