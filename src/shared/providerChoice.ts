// THE FAILOVER RULE (docs/design.md, "Failover"): which provider an attempt goes to. Pure: the claim
// (src/db/orderMailClaim.ts) calls it with what it read of the order's earlier attempts under the current send
// key and of the providers' shared health, and writes the answer into the row with the same fenced statement
// that hands the row to the attempt, so every worker sees one choice.
//
// An attempt may go elsewhere than its predecessors ONLY when every earlier attempt under the same key is known
// not to have reached its provider: no request (refused before it started, the fence never passed), throttled,
// a status the provider's outcome table calls not sent, or verified not found at the provider it went to. All
// of those are recorded as outcome `not_sent`. Anything else (an unknown the policy settled as failed, a retry
// under the key, a rejection) binds the mail to that attempt's provider: a second provider taking it could
// make a second mail, while the same provider either dedupes it (a key) or shows both sends to its lookup.
// A mail bound to a provider the claimer is not configured for (removed from MAIL_PROVIDERS) therefore has no
// provider to go to: the answer says so and the claim fails the order at once (docs/providers.md, "Draining").
// A draining provider (MAIL_PROVIDERS_DRAINING) keeps what is bound to it and takes nothing new.
import type { AttemptOutcome } from './mailOutcome';

/** One earlier attempt of the order under the current send key (resend count), as its audit row says. */
export interface EarlierAttempt {
  attempt: number;
  /** The provider the claim chose for it; null for attempts from before migration 0045 or a test's fake. */
  provider: string | null;
  outcome: AttemptOutcome;
}

export type OperatorMode = 'auto' | 'pinned' | 'skipped';

/** What the shared health table (src/db/providerHealth.ts) says of one provider right now. */
export interface ProviderStanding {
  provider: string;
  operatorMode: OperatorMode;
  /** Its failures in a row reached the threshold and its skip window has not ended yet. */
  unhealthy: boolean;
}

/**
 * Why the attempt goes where it goes, as the row's provider_choice records it:
 * - first: the first configured provider, nothing passed over (or the only one, whatever its health);
 * - pinned: an operator pinned it (npm run ops -- provider pin);
 * - after-not-sent: this order's previous attempt was known not sent at another provider, so it tries the next;
 * - skipped-unhealthy / skipped-by-operator: providers before it in the list are skipped;
 * - all-unavailable: every provider is skipped, so the list's first that no operator skipped is tried anyway;
 * - bound: an earlier attempt may have reached `provider`, so the mail stays there.
 */
export type ChoiceReason =
  | 'first'
  | 'pinned'
  | 'after-not-sent'
  | 'skipped-unhealthy'
  | 'skipped-by-operator'
  | 'all-unavailable'
  | 'bound';

export interface ProviderChoice {
  /** Null only when no provider is configured by name (a test's fake transport). */
  provider: string | null;
  reason: ChoiceReason;
  /** Words for the log and the Web UI: why this provider, and which were passed over. */
  explanation: string;
}

/**
 * No provider may take the attempt: an earlier attempt may have reached `provider`, and the claimer is not
 * configured for it. Nothing may be claimed: another provider could make a second mail.
 */
export interface NoProviderChoice {
  provider: string;
  /** all-draining: every provider drains (loadConfig refuses that), so none may take a new attempt. */
  reason: 'bound-unconfigured' | 'all-draining';
  explanation: string;
}

/** Outcomes that prove the attempt's request was not taken by its provider. */
const KNOWN_NOT_SENT: ReadonlySet<AttemptOutcome> = new Set<AttemptOutcome>(['not_sent']);

function isKnownNotSent(outcome: AttemptOutcome): boolean {
  return KNOWN_NOT_SENT.has(outcome);
}

export function chooseProvider(input: {
  /** MAIL_PROVIDERS in order; the first is the primary. */
  configured: readonly string[];
  /** MAIL_PROVIDERS_DRAINING: configured providers that keep their bound attempts and take no new ones. */
  draining?: readonly string[];
  /** The order's earlier attempts under the current key, any order. */
  earlier: readonly EarlierAttempt[];
  standings: readonly ProviderStanding[];
}): ProviderChoice | NoProviderChoice {
  const draining = new Set(input.draining ?? []);
  const earlier = [...input.earlier].sort((a, b) => a.attempt - b.attempt);
  const binding = earlier.filter((attempt) => !isKnownNotSent(attempt.outcome)).at(-1);
  if (binding !== undefined) {
    // Not recorded (before migration 0045): it went where the workers sent then, the single provider, the first.
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
    // Every branch below ends at the one provider (pinned, healthy, or tried anyway when skipped), so the claim
    // does not read the shared health for it (src/db/orderMailClaim.ts): one statement less per order.
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
