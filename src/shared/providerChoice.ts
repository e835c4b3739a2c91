// The failover rule, pure: an attempt moves only when every earlier one of its key is known not sent
// (docs/design.md §5, "Failover: a second provider that cannot send twice").
import type { AttemptOutcome } from './mailOutcome';

export interface EarlierAttempt {
  attempt: number;
  /** Null before migration 0045 or for a test's fake. */
  provider: string | null;
  outcome: AttemptOutcome;
}

export type OperatorMode = 'auto' | 'pinned' | 'skipped';

export interface ProviderStanding {
  provider: string;
  operatorMode: OperatorMode;
  unhealthy: boolean;
}

/** The row's provider_choice (docs/design.md §4). */
export type ChoiceReason =
  | 'first'
  | 'pinned'
  | 'after-not-sent'
  | 'skipped-unhealthy'
  | 'skipped-by-operator'
  | 'all-unavailable'
  | 'bound';

export interface ProviderChoice {
  provider: string | null;
  reason: ChoiceReason;
  explanation: string;
}

/** Nothing may be claimed: another provider could make a second mail. */
export interface NoProviderChoice {
  provider: string;
  reason: 'bound-unconfigured' | 'all-draining';
  explanation: string;
}

const KNOWN_NOT_SENT: ReadonlySet<AttemptOutcome> = new Set<AttemptOutcome>(['not_sent']);

function isKnownNotSent(outcome: AttemptOutcome): boolean {
  return KNOWN_NOT_SENT.has(outcome);
}

export function chooseProvider(input: {
  configured: readonly string[];
  draining?: readonly string[];
  earlier: readonly EarlierAttempt[];
  standings: readonly ProviderStanding[];
}): ProviderChoice | NoProviderChoice {
  const draining = new Set(input.draining ?? []);
  const earlier = [...input.earlier].sort((a, b) => a.attempt - b.attempt);
  const binding = earlier.filter((attempt) => !isKnownNotSent(attempt.outcome)).at(-1);
  if (binding !== undefined) {
    // Before migration 0045 the single provider, the first, took it.
    const provider = binding.provider ?? input.configured[0] ?? null;
    if (provider !== null && input.configured.length > 0 && !input.configured.includes(provider)) {
      return {
        provider,
        reason: 'bound-unconfigured',
        explanation:
          `attempt ${binding.attempt} ended ${binding.outcome} at ${provider} and may have reached it, and ` +
          `${provider} is not in MAIL_PROVIDERS (${input.configured.join(', ')}): no other provider may take ` +
          'this mail; a worker with its settings (MAIL_PROVIDERS_DRAINING) must finish it',
      };
    }
    return {
      provider,
      reason: 'bound',
      explanation:
        `attempt ${binding.attempt} ended ${binding.outcome} at ${provider ?? 'the configured provider'} and may ` +
        'have reached it, so this attempt goes there too and nowhere else',
    };
  }
  // New attempts go only to providers that take new orders; MAIL_PROVIDERS_DRAINING never lists them all.
  const configured = input.configured.filter((provider) => !draining.has(provider));
  if (input.configured.length === 0) {
    return { provider: null, reason: 'first', explanation: 'no provider is configured by name' };
  }
  if (configured.length === 0) {
    // loadConfig refuses such a list; a claimer given one anyway must not send to a draining provider.
    const first = input.configured[0]!;
    return {
      provider: first,
      reason: 'all-draining',
      explanation: `every provider of MAIL_PROVIDERS is draining (MAIL_PROVIDERS_DRAINING): none takes a new attempt`,
    };
  }
  if (configured.length === 1) {
    // Every branch below ends here, so the claim skips reading health: one statement less per order.
    const only = configured[0]!;
    const why = draining.size === 0 ? 'the only configured provider' : 'the only one not draining';
    return { provider: only, reason: 'first', explanation: `${only}, ${why}` };
  }
  const standing = new Map(input.standings.map((entry) => [entry.provider, entry]));
  const pinned = configured.find((provider) => standing.get(provider)?.operatorMode === 'pinned');
  if (pinned !== undefined) {
    return { provider: pinned, reason: 'pinned', explanation: `${pinned} is pinned by an operator` };
  }
  // This order's last attempt failed (known not sent) at `previous`: try the others first, it last.
  const previous = earlier.at(-1)?.provider ?? null;
  const order =
    previous !== null && configured.includes(previous)
      ? [...configured.filter((provider) => provider !== previous), previous]
      : [...configured];
  const passedOver: string[] = [];
  for (const provider of order) {
    const entry = standing.get(provider);
    if (entry?.operatorMode === 'skipped') {
      passedOver.push(`${provider} skipped by an operator`);
      continue;
    }
    if (entry?.unhealthy === true) {
      passedOver.push(`${provider} failing`);
      continue;
    }
    const reason: ChoiceReason =
      passedOver.length > 0
        ? passedOver.some((why) => why.endsWith('failing'))
          ? 'skipped-unhealthy'
          : 'skipped-by-operator'
        : previous !== null && provider !== previous
          ? 'after-not-sent'
          : 'first';
    const after =
      previous !== null && provider !== previous ? `the previous attempt was not sent at ${previous}` : '';
    const parts = [after, ...passedOver].filter((part) => part !== '');
    return {
      provider,
      reason,
      explanation:
        parts.length === 0 ? `${provider}, the first configured` : `${provider}: ${parts.join('; ')}`,
    };
  }
  // Everything is skipped: better the first an operator did not skip than no mail at all.
  const fallback =
    configured.find((provider) => standing.get(provider)?.operatorMode !== 'skipped') ?? configured[0]!;
  return {
    provider: fallback,
    reason: 'all-unavailable',
    explanation: `every provider is skipped (${passedOver.join('; ')}); trying ${fallback} anyway`,
  };
}
