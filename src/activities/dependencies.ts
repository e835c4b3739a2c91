import type { Database } from '../db/pool';
import type { HealthSettings } from '../db/providerHealth';
import type { MailIdentity } from '../mail/confirmationMail';
import type { MailSizeLimits } from '../mail/mailSizeLimits';
import type { MailTemplates } from '../mail/template/mailTemplates';
import type { MailTransport } from '../mail/types';
import type { OrderMailMetrics } from '../metrics/orderMailMetrics';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import type { ReadResetOfRun } from '../temporal/resetHistory';
import type { Verifier } from '../verification/verifier';
import type { WitnessProber } from '../verification/witnessProbe';

/** What the activities need, injected, so tests pass real pools or fakes through the same door. */
export interface ActivityDependencies {
  db: Database;
  mail: MailTransport;
  mailIdentity: MailIdentity;
  /** The shop's templates (MAIL_TEMPLATE_DIR), loaded at start; the shipped Japanese ones when absent. */
  mailTemplates?: MailTemplates;
  /** How large a mail may get (MAIL_MAX_ORDER_ITEMS, MAIL_MAX_RENDERED_BYTES); the defaults when absent. */
  mailLimits?: MailSizeLimits;
  settings: OrderMailWorkflowSettings;
  /** Written into the audit trail as `recorded_by`; the Temporal worker identity (pid@host) by default. */
  workerIdentity: string;
  /** The product's metrics (src/metrics); none when absent, as in most tests. */
  metrics?: OrderMailMetrics;
  /** Reads from history whether a reset started a run, so its claim records it (src/activities/resetAct.ts). */
  readResetOfRun?: ReadResetOfRun;
  /** MAIL_DEPLOYMENT_ID, in every send key, so another system on the account is never taken for this one. */
  deploymentId?: string;
  /** How the verify activity asks the provider; absent when nothing is verified. */
  verifier?: Verifier;
  /** MAIL_PROVIDERS (failover): one transport per provider, in order, `mail` first; absent: `mail` alone. */
  mailProviders?: readonly MailTransport[];
  /** MAIL_PROVIDERS_DRAINING: finish what is bound, take no new attempts (docs/providers.md). Absent: none. */
  drainingProviders?: readonly string[];
  /** One verifier per provider that can be asked, chosen by the attempt's destination. */
  verifiers?: readonly Verifier[];
  /** The sender and subject of each provider by name (<PROVIDER>_MAIL_FROM, …); else `mailIdentity`. */
  providerMailIdentity?: ReadonlyMap<string, MailIdentity>;
  /** The workflow settings of each provider (its settle delay, its key's window), by name; else `settings`. */
  providerSettings?: ReadonlyMap<string, OrderMailWorkflowSettings>;
  /** Makes a witness probe for an unknown with no witness (MAIL_WITNESS_SINK_ADDRESS); absent: none. */
  witnessProber?: WitnessProber;
  /** When the send's failures make new attempts skip a provider (migration 0046); absent: never. */
  providerHealth?: HealthSettings;
}

/** The configured providers' transports in order: `mailProviders`, or `mail` alone. */
export function mailTransportsOf(
  deps: Pick<ActivityDependencies, 'mail' | 'mailProviders'>,
): readonly MailTransport[] {
  return deps.mailProviders ?? [deps.mail];
}

/** The names the claim chooses from (MAIL_PROVIDERS); empty for a fake transport that names none. */
export function providerNamesOf(deps: Pick<ActivityDependencies, 'mail' | 'mailProviders'>): string[] {
  return mailTransportsOf(deps).flatMap((transport) =>
    transport.destination === undefined ? [] : [transport.destination.provider],
  );
}

/** Every verifier this worker has: `verifiers`, or `verifier` alone. */
export function verifiersOf(deps: Pick<ActivityDependencies, 'verifier' | 'verifiers'>): readonly Verifier[] {
  return deps.verifiers ?? (deps.verifier === undefined ? [] : [deps.verifier]);
}
