// `npm run ops -- provider status|pin|skip|auto`: what an operator sees of the providers during an outage, and
// how they steer new attempts (docs/operating.md#a-provider-outage). Pinning or skipping changes only where
// NEW attempts go; the failover rule still keeps a mail whose earlier attempt may have arrived at its provider.
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
  /** What this command changed, in words; null for `status`. */
  changed: string | null;
}

export async function runProviderAct(
  db: Database,
  act: ProviderAct,
  context: { operator: string; configured: string[] | null },
): Promise<ProviderStatus> {
  const { configured } = context;
  let changed: string | null = null;
  if (act.act !== 'status') {
    // Checked before anything is written: a typo or a provider the workers do not have changes nothing.
    if (act.provider !== null && configured !== null && !configured.includes(act.provider)) {
      throw new OpsRefusal(
        'PROVIDER_NOT_CONFIGURED',
        `${act.provider} is not in MAIL_PROVIDERS (${configured.join(', ')}); nothing was changed.`,
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
  const [health, recent] = await Promise.all([readProviderHealth(db), recentAttemptsByProvider(db)]);
  return { configured, health, recent, changed };
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
  lines.push('', 'Attempts in the last hour, by provider and outcome:');
  if (status.recent.length === 0) lines.push('  none');
  for (const entry of status.recent) {
    lines.push(`  ${entry.provider ?? '(not recorded)'} ${entry.outcome}: ${entry.attempts}`);
  }
  return lines.join('\n');
}
