// MAIL_PROVIDERS: each provider reads the MAIL_* variables through a view where its own <PROVIDER>_* names
// stand in, so one parser serves all (the table in docs/providers.md, "Failover"). Pure.
import {
  MAIL_PROVIDER_FACTS,
  MAIL_PROVIDER_NAMES,
  type MailProviderName,
} from '../mail/providers/mailProvider';

const OWN_ONLY = [
  'MAIL_API_KEY',
  'MAIL_API_BASE_URL',
  'MAIL_IDEMPOTENCY_WINDOW_MS',
  'MAIL_VERIFY_SETTLE_DELAY_MS',
  'MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON',
  'MAIL_VERIFY_RETENTION_MS',
] as const;
const SHARED = ['MAIL_FROM', 'MAIL_REPLY_TO', 'MAIL_SUBJECT', 'MAIL_VERIFY'] as const;

// The sender's names keep their MAIL_ (POSTMARK_MAIL_FROM reads better than POSTMARK_FROM).
const KEEPS_MAIL_PREFIX: ReadonlySet<string> = new Set(['MAIL_FROM', 'MAIL_REPLY_TO', 'MAIL_SUBJECT']);

function providerVariable(provider: string, name: string): string {
  return `${provider.toUpperCase()}_${KEEPS_MAIL_PREFIX.has(name) ? name : name.replace(/^MAIL_/, '')}`;
}

export interface ProviderEnvView {
  env: Record<string, string | undefined>;
  /** Names the variable the operator set (or should set). */
  rename(problem: string): string;
}

function isSet(env: Record<string, string | undefined>, name: string): boolean {
  const value = env[name]?.trim();
  return value !== undefined && value !== '';
}

export function providerEnvView(
  env: Record<string, string | undefined>,
  provider: string,
  index: number,
): ProviderEnvView {
  const view: Record<string, string | undefined> = { ...env };
  const names = new Map<string, string>();
  for (const name of [...OWN_ONLY, ...SHARED]) {
    const own = providerVariable(provider, name);
    const fallback = index === 0 || (SHARED as readonly string[]).includes(name);
    if (isSet(env, own)) {
      view[name] = env[own];
      names.set(name, own);
    } else if (fallback) {
      names.set(name, isSet(env, name) || index === 0 ? name : own);
    } else {
      view[name] = undefined;
      names.set(name, own);
    }
  }
  return {
    env: view,
    rename(problem) {
      let renamed = problem;
      for (const [name, actual] of names) {
        if (actual !== name) renamed = renamed.replace(new RegExp(`\\b${name}\\b`, 'g'), actual);
      }
      return renamed;
    },
  };
}

/** MAIL_PROVIDERS, else MAIL_PROVIDER as a list of one; always usable, problems appended. */
export function readProviderList(
  env: Record<string, string | undefined>,
  problems: string[],
  fallback: MailProviderName | 'smtp',
): (MailProviderName | 'smtp')[] {
  const single = env.MAIL_PROVIDER?.trim() || null;
  const listed = env.MAIL_PROVIDERS?.trim() || null;
  const allowed: readonly string[] = [...MAIL_PROVIDER_NAMES, 'smtp'];
  if (listed === null) {
    if (single === null) return [fallback];
    if (!allowed.includes(single)) {
      problems.push(`MAIL_PROVIDER must be one of ${allowed.join(', ')} (got ${JSON.stringify(single)}).`);
      return [fallback];
    }
    return [single as MailProviderName | 'smtp'];
  }
  const names = listed.split(',').map((name) => name.trim());
  const list: MailProviderName[] = [];
  for (const name of names) {
    if (name === 'smtp') {
      problems.push('MAIL_PROVIDERS cannot hold smtp: SMTP is only a single provider (MAIL_PROVIDER=smtp).');
    } else if (!(MAIL_PROVIDER_NAMES as readonly string[]).includes(name)) {
      problems.push(
        `MAIL_PROVIDERS must list providers from ${MAIL_PROVIDER_NAMES.join(', ')}, comma-separated ` +
          `(got ${JSON.stringify(name)}).`,
      );
    } else if (list.includes(name as MailProviderName)) {
      problems.push(`MAIL_PROVIDERS names ${name} twice; each provider once, in the order to try them.`);
    } else list.push(name as MailProviderName);
  }
  if (single !== null && list.length > 0 && single !== list[0]) {
    problems.push(
      `MAIL_PROVIDER (${single}) and MAIL_PROVIDERS (${listed}) disagree: set only MAIL_PROVIDERS, or make ` +
        'MAIL_PROVIDER its first.',
    );
  }
  return list.length > 0 ? list : [fallback];
}

/** MAIL_PROVIDERS_DRAINING (docs/providers.md#draining-a-provider); one provider must stay undrained. */
export function readDrainingProviders(
  value: string | null,
  list: readonly string[],
  problems: string[],
): string[] {
  if (value === null || value.trim() === '') return [];
  const names = value.split(',').map((name) => name.trim());
  const draining: string[] = [];
  for (const name of names) {
    if (!list.includes(name)) {
      problems.push(
        `MAIL_PROVIDERS_DRAINING names ${JSON.stringify(name)}, which is not in MAIL_PROVIDERS ` +
          `(${list.join(', ')}): a draining provider keeps its settings there until nothing is bound to it.`,
      );
    } else if (!draining.includes(name)) draining.push(name);
  }
  if (draining.length > 0 && draining.length === list.length) {
    problems.push(
      'MAIL_PROVIDERS_DRAINING names every provider of MAIL_PROVIDERS: at least one must take new orders.',
    );
  }
  return draining;
}

/** The lookup's retention as configured, else documented; for reports only, so a bad value reads as default. */
export function lookupRetentionMs(
  env: Record<string, string | undefined>,
  provider: string,
  index: number,
): number | null {
  if (!(MAIL_PROVIDER_NAMES as readonly string[]).includes(provider)) return null;
  const facts = MAIL_PROVIDER_FACTS[provider as MailProviderName].verification;
  if (facts === null || facts.retentionMs === null) return null;
  // Not in the list (-1): only its own name counts, as for any provider after the first.
  const value = Number(providerEnvView(env, provider, index < 0 ? 1 : index).env.MAIL_VERIFY_RETENTION_MS);
  return Number.isInteger(value) && value > 0 ? value : facts.retentionMs;
}

/** What a deployment passes through for `provider`. */
export function providerVariableNames(provider: MailProviderName): string[] {
  return [...OWN_ONLY, ...SHARED].map((name) => providerVariable(provider, name));
}
