// `npm run ops -- provider status|pin|skip|auto`: what an operator sees of the providers during an outage, and
// how they steer new attempts (docs/operating.md#a-provider-outage). Pinning or skipping changes only where
// NEW attempts go; the failover rule still keeps a mail whose earlier attempt may have arrived at its provider.
import { countOpenRowsByProvider, countPolicySettledSince } from '../db/boundProviders';
import {
  readProviderHealth,
  recentAttemptsByProvider,
  resetProviderModes,
  setProviderMode,
  type ProviderHealthRow,
} from '../db/providerHealth';
import type { Database } from '../db/pool';
import type { ProviderAct } from './opsCommand';
import { OpsRefusal } from './opsContext';

export interface ProviderStatus {
  /** MAIL_PROVIDERS as the ops environment names it; null when it names none. */
  configured: string[] | null;
  health: ProviderHealthRow[];
  recent: { provider: string | null; outcome: string; attempts: number }[];
  /** MAIL_PROVIDERS_DRAINING as the ops environment names it. */
  draining: string[];
  /**
   * What is still bound to each provider (docs/providers.md#draining-a-provider): a provider may leave
   * MAIL_PROVIDERS, or change its key, domain, stream, configuration set or base URL, once all are 0.
   */
  bound: BoundToProvider[];
  /** What this command changed, in words; null for `status`. */
  changed: string | null;
}

export interface BoundToProvider {
  provider: string;
  /** Open rows: in flight or an orphan to settle ('sending'), or failed with an attempt that may have arrived. */
  sending: number;
  failedBound: number;
  /** Attempts the policy settled whose late answer its lookup may still give (dispatched within `retentionMs`). */
  policySettled: number;
  /** The lookup's retention the count is taken over; for a provider with none, WEBHOOK_EVIDENCE_WINDOW_MS. */
  retentionMs: number;
  /** Whether `retentionMs` is the lookup's (else the window for webhook evidence). */
  lookup: boolean;
}

/**
 * For a provider whose evidence comes by webhook only (no lookup that forgets): how far back a settled
 * attempt is counted. A day covers SNS's and SendGrid's retries of a late event many times over.
 */
export const WEBHOOK_EVIDENCE_WINDOW_MS = 24 * 3_600_000;

export async function runProviderAct(
  db: Database,
  act: ProviderAct,
  context: {
    operator: string;
    configured: string[] | null;
    draining?: string[];
    /** The lookup's retention of a provider as the workers read it (src/config/providerList.ts). */
    retentionMs?: (provider: string) => number | null;
  },
): Promise<ProviderStatus> {
  const { configured } = context;
  const draining = context.draining ?? [];
  const retentionOf = context.retentionMs ?? (() => null);
  let changed: string | null = null;
  if (act.act !== 'status') {
    // Checked before anything is written: a typo or a provider the workers do not have changes nothing.
    if (act.provider !== null && configured !== null && !configured.includes(act.provider)) {
      throw new OpsRefusal(
        'PROVIDER_NOT_CONFIGURED',
        `${act.provider} is not in MAIL_PROVIDERS (${configured.join(', ')}); nothing was changed.`,
      );
    }
    // A pin would be ignored: a draining provider takes no new attempt (src/shared/providerChoice.ts).
    if (act.act === 'pin' && act.provider !== null && draining.includes(act.provider)) {
      throw new OpsRefusal(
        'PROVIDER_DRAINING',
        `${act.provider} is draining (MAIL_PROVIDERS_DRAINING): it takes no new attempts; nothing was changed.`,
      );
    }
    if (act.act === 'auto' && act.provider === null) {
      const count = await resetProviderModes(db, context.operator);
      changed = `${count} provider(s) back to automatic`;
    } else {
      const mode = act.act === 'pin' ? 'pinned' : act.act === 'skip' ? 'skipped' : 'auto';
      await setProviderMode(db, { provider: act.provider!, mode, operator: context.operator });
      changed = `${act.provider} is now ${mode}${mode === 'pinned' ? ' (any other pin lifted)' : ''}`;
    }
  }
  const [health, recent, open] = await Promise.all([
    readProviderHealth(db),
    recentAttemptsByProvider(db),
    countOpenRowsByProvider(db),
  ]);
  const names = new Set([
    ...(configured ?? []),
    ...health.map((row) => row.provider),
    ...open.map((row) => row.provider),
    ...recent.flatMap((row) => (row.provider === null ? [] : [row.provider])),
  ]);
  const bound = await Promise.all(
    [...names].sort().map(async (provider): Promise<BoundToProvider> => {
      const lookupMs = retentionOf(provider);
      const retentionMs = lookupMs ?? WEBHOOK_EVIDENCE_WINDOW_MS;
      const rows = open.find((row) => row.provider === provider);
      return {
        provider,
        sending: rows?.sending ?? 0,
        failedBound: rows?.failedBound ?? 0,
        policySettled: await countPolicySettledSince(db, provider, new Date(Date.now() - retentionMs)),
        retentionMs,
        lookup: lookupMs !== null,
      };
    }),
  );
  return { configured, health, recent, changed, draining, bound };
}

export function formatProviderStatus(status: ProviderStatus): string {
  const lines: string[] = [];
  if (status.changed !== null) lines.push(`Done: ${status.changed}.`, '');
  lines.push(`Providers (MAIL_PROVIDERS): ${status.configured?.join(', ') ?? '(not set here)'}`);
  const names = new Set([...(status.configured ?? []), ...status.health.map((row) => row.provider)]);
  for (const name of names) {
    const row = status.health.find((entry) => entry.provider === name);
    const mode = row?.operatorMode ?? 'auto';
    const skipping =
      row?.skippedNow === true ? `skipped until ${row.skipUntil!.toISOString()}` : 'taking new attempts';
    lines.push(
      `  ${name}: ${mode}${row?.operatorSetBy ? ` (set by ${row.operatorSetBy})` : ''}; ${skipping}; ` +
        `${row?.consecutiveFailures ?? 0} failure(s) in a row` +
        (row?.lastFailure ? `, last ${row.lastFailure} at ${row.lastFailureAt!.toISOString()}` : ''),
    );
  }
  if (status.draining.length > 0) {
    lines.push(`Draining (MAIL_PROVIDERS_DRAINING, no new attempts): ${status.draining.join(', ')}`);
  }
  lines.push('', 'Still bound to each provider (all 0: its settings may change or go):');
  for (const entry of status.bound) {
    const window = `${formatHours(entry.retentionMs)} ${entry.lookup ? 'lookup retention' : 'webhook window'}`;
    const where =
      status.configured === null || status.configured.includes(entry.provider)
        ? ''
        : ' (NOT in MAIL_PROVIDERS)';
    lines.push(
      `  ${entry.provider}${where}: ${entry.sending + entry.failedBound} open row(s) (${entry.sending} sending, ` +
        `${entry.failedBound} failed and bound), ${entry.policySettled} settled by the policy within the ${window}`,
    );
  }
  lines.push('', 'Attempts in the last hour, by provider and outcome:');
  if (status.recent.length === 0) lines.push('  none');
  for (const entry of status.recent) {
    lines.push(`  ${entry.provider ?? '(not recorded)'} ${entry.outcome}: ${entry.attempts}`);
  }
  return lines.join('\n');
}

function formatHours(ms: number): string {
  const hours = ms / 3_600_000;
  return hours >= 48 && hours % 24 === 0 ? `${hours / 24} d` : `${Math.round(hours * 10) / 10} h`;
}
