// Verification settings, pure; each variable and its default: docs/providers.md, "Settings".
import { MAIL_PROVIDER_FACTS, type MailProviderName } from '../mail/providers/mailProvider';
import type { VerificationFacts } from './providerLookup';

export interface VerificationConfig {
  facts: VerificationFacts;
  settleDelayMs: number;
  /** Why the settle delay is below the provider's documented figure, when it is (the operator's words). */
  settleDelayOverrideReason: string | null;
  retentionMs: number | null;
  lookupTimeoutMs: number;
  deadlineMs: number;
  connections: number;
}

export const VERIFICATION_DEFAULTS = {
  MAIL_VERIFY_LOOKUP_TIMEOUT_MS: 10_000,
  MAIL_VERIFY_DEADLINE_MS: 300_000,
  MAIL_VERIFY_CONNECTIONS: 2,
} as const;

/** Null when verification is off or the provider (or SMTP) cannot verify. Problems are appended to `problems`. */
export function readVerificationConfig(
  env: Record<string, string | undefined>,
  provider: MailProviderName | 'smtp',
  problems: string[],
): VerificationConfig | null {
  const switchValue = optional(env, 'MAIL_VERIFY');
  if (switchValue !== null && switchValue !== 'on' && switchValue !== 'off') {
    problems.push(`MAIL_VERIFY must be on or off (got ${JSON.stringify(switchValue)}).`);
  }
  const facts = provider === 'smtp' ? null : MAIL_PROVIDER_FACTS[provider].verification;
  if (switchValue === 'on' && facts === null) {
    problems.push(
      `MAIL_VERIFY=on, but MAIL_PROVIDER=${provider} offers no way to verify a send afterwards` +
        (provider === 'resend'
          ? ' (and needs none: its idempotency key makes unknown outcomes retryable).'
          : '.'),
    );
  }
  if (switchValue === 'off' || facts === null) return null;

  const settleDelayMs = positiveInt(env, 'MAIL_VERIFY_SETTLE_DELAY_MS', facts.settleDelayMs, problems);
  const retentionMs =
    facts.retentionMs === null
      ? null
      : positiveInt(env, 'MAIL_VERIFY_RETENTION_MS', facts.retentionMs, problems);
  const lookupTimeoutMs = positiveInt(
    env,
    'MAIL_VERIFY_LOOKUP_TIMEOUT_MS',
    VERIFICATION_DEFAULTS.MAIL_VERIFY_LOOKUP_TIMEOUT_MS,
    problems,
  );
  const deadlineMs = positiveInt(
    env,
    'MAIL_VERIFY_DEADLINE_MS',
    VERIFICATION_DEFAULTS.MAIL_VERIFY_DEADLINE_MS,
    problems,
  );
  const connections = positiveInt(
    env,
    'MAIL_VERIFY_CONNECTIONS',
    VERIFICATION_DEFAULTS.MAIL_VERIFY_CONNECTIONS,
    problems,
  );
  const settleDelayOverrideReason = optional(env, 'MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON');
  const documented = facts.documentedSettleDelayMs;
  if (documented !== null && settleDelayMs < documented && settleDelayOverrideReason === null) {
    problems.push(
      `MAIL_VERIFY_SETTLE_DELAY_MS (${settleDelayMs}) is below what ${provider} documents (${documented} ms: ` +
        `${facts.settleDelaySource}): a "not found" asked that early can be wrong and send a second mail. ` +
        'Raise it, or set MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON to say why a shorter delay is safe here.',
    );
  }
  if (deadlineMs < lookupTimeoutMs) {
    problems.push(
      `MAIL_VERIFY_DEADLINE_MS (${deadlineMs}) must be at least MAIL_VERIFY_LOOKUP_TIMEOUT_MS (${lookupTimeoutMs}), ` +
        'or not even one lookup fits before the policy decides.',
    );
  }
  if (retentionMs !== null && retentionMs <= settleDelayMs) {
    problems.push(
      `MAIL_VERIFY_RETENTION_MS (${retentionMs}) must be longer than MAIL_VERIFY_SETTLE_DELAY_MS (${settleDelayMs}): ` +
        'a lookup made after the settle delay must still find the message.',
    );
  }
  return {
    facts,
    settleDelayMs,
    settleDelayOverrideReason,
    retentionMs,
    lookupTimeoutMs,
    deadlineMs,
    connections,
  };
}

function optional(env: Record<string, string | undefined>, name: string): string | null {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? null : value;
}

function positiveInt(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  problems: string[],
): number {
  const value = optional(env, name);
  if (value === null) return fallback;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    problems.push(`${name} must be a positive integer (got ${JSON.stringify(value)}).`);
    return fallback;
  }
  return Number(value);
}
