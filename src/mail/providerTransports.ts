// MAIL_PROVIDERS (failover): one transport and one verifier per provider, in order, closed on shutdown.
import type { ProviderConfig } from '../config/loadConfig';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import { createVerifier, type Verifier } from '../verification/verifier';
import { createMailTransport } from './createMailTransport';
import type { SmtpConfig } from './smtp/smtpMailTransport';
import type { MailIdentity } from './confirmationMail';
import type { MailTransport } from './types';

export interface ProviderTransports {
  /** In MAIL_PROVIDERS order; the first is the primary. */
  transports: MailTransport[];
  verifiers: Verifier[];
  settings: Map<string, OrderMailWorkflowSettings>;
  identities: Map<string, MailIdentity>;
  close(): Promise<void>;
}

export function createProviderTransports(
  providers: readonly ProviderConfig[],
  smtp: SmtpConfig | null,
  workflow: OrderMailWorkflowSettings,
): ProviderTransports {
  const transports: MailTransport[] = [];
  const verifiers: Verifier[] = [];
  const closers: (() => Promise<void>)[] = [];
  const settings = new Map<string, OrderMailWorkflowSettings>();
  const identities = new Map<string, MailIdentity>();
  try {
    for (const provider of smtp === null ? providers : providers.slice(0, 1)) {
      const transport = createMailTransport(provider.mailApi, smtp);
      transports.push(transport);
      closers.push(() => transport.close());
      if (provider.verification !== null && smtp === null) {
        const verification = createVerifier(provider.verification, provider.mailApi);
        verifiers.push(verification.verifier);
        closers.push(() => verification.close());
      }
      settings.set(provider.name, {
        ...workflow,
        idempotency: provider.idempotency,
        verification:
          provider.verification === null || smtp !== null
            ? null
            : {
                settleDelayMs: provider.verification.settleDelayMs,
                lookupTimeoutMs: provider.verification.lookupTimeoutMs,
                deadlineMs: provider.verification.deadlineMs,
              },
      });
      identities.set(provider.name, provider.mail);
    }
  } catch (error) {
    void Promise.allSettled(closers.map((close) => close()));
    throw error;
  }
  return {
    transports,
    verifiers,
    settings,
    identities,
    close: async () => {
      await Promise.allSettled(closers.reverse().map((close) => close()));
    },
  };
}
