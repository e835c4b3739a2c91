// Where an attempt went, as its dispatch fence recorded it: a lookup asks there, or answers "cannot tell"
// (docs/design.md §5, "What counts as evidence").
import { createHash } from 'node:crypto';

export interface SendDestination {
  provider: string;
  /** A Mailgun region is its own origin. */
  origin: string;
  /** The Mailgun domain, the Postmark stream, SES's region/configuration set. */
  scope: string | null;
  /** A fingerprint of the key, never the key: another key may be another account's. */
  credentialFingerprint: string | null;
  /** SES: the sending account its events name (migration 0052); null before it was recorded. */
  account?: string | null;
}

/** Tells two keys apart, useless for finding one; the label keeps it from being the key's plain hash. */
export function credentialFingerprint(secret: string): string {
  const digest = createHash('sha256')
    .update(`order-confirmation-mail credential\u0000${secret}`)
    .digest('hex');
  return `sha256:${digest.slice(0, 16)}`;
}

export function sesConfigurationSetOf(destination: SendDestination): string | null {
  if (destination.provider !== 'ses' || destination.scope === null) return null;
  const slash = destination.scope.indexOf('/');
  return slash < 0 ? null : destination.scope.slice(slash + 1);
}

/** The path prefix is not part of where a request went. */
export function originOf(baseUrl: string): string {
  return new URL(baseUrl).origin;
}

export function destinationOfMailApi(config: {
  provider: string;
  baseUrl: string;
  apiKey: string;
  mailgunDomain?: string | null;
  postmarkMessageStream?: string;
  ses?: { region: string; configurationSet: string; accountId: string; credentialIdentity: string } | null;
}): SendDestination {
  if (config.provider === 'ses' && config.ses !== undefined && config.ses !== null) {
    // A configuration set lives in one region.
    return {
      provider: 'ses',
      origin: originOf(config.baseUrl),
      scope: `${config.ses.region}/${config.ses.configurationSet}`,
      credentialFingerprint: credentialFingerprint(config.ses.credentialIdentity),
      account: config.ses.accountId,
    };
  }
  const scope =
    config.provider === 'mailgun'
      ? (config.mailgunDomain ?? null)
      : config.provider === 'postmark'
        ? (config.postmarkMessageStream ?? null)
        : null;
  return {
    provider: config.provider,
    origin: originOf(config.baseUrl),
    scope,
    credentialFingerprint: config.apiKey === '' ? null : credentialFingerprint(config.apiKey),
  };
}

/** Why a worker sending to `asking` cannot ask about a request that went to `recorded`; null when it can. */
export function whyCannotAsk(recorded: SendDestination | null, asking: SendDestination): string | null {
  if (recorded === null) {
    return "the attempt's destination was not recorded at its dispatch, so no lookup can be known to ask where it went";
  }
  const differs: string[] = [];
  if (recorded.provider !== asking.provider)
    differs.push(`provider ${recorded.provider}, asking ${asking.provider}`);
  if (recorded.origin !== asking.origin) differs.push(`origin ${recorded.origin}, asking ${asking.origin}`);
  if (recorded.scope !== asking.scope) {
    differs.push(
      `${scopeName(recorded.provider)} ${recorded.scope ?? '(none)'}, asking ${asking.scope ?? '(none)'}`,
    );
  }
  if (recorded.credentialFingerprint !== asking.credentialFingerprint) {
    differs.push(
      `another API key (${recorded.credentialFingerprint ?? 'none'}, asking ${asking.credentialFingerprint ?? 'none'})`,
    );
  }
  // An account not yet recorded (NULL) is taken to be this worker's.
  if ((recorded.account ?? null) !== null && recorded.account !== (asking.account ?? null)) {
    differs.push(`account ${recorded.account}, asking ${asking.account ?? '(none)'}`);
  }
  if (differs.length === 0) return null;
  return (
    `the attempt went elsewhere than this worker can ask (${differs.join('; ')}): its lookup could not show ` +
    'that request, so an empty answer would mean nothing'
  );
}

function scopeName(provider: string): string {
  if (provider === 'mailgun') return 'Mailgun domain';
  if (provider === 'postmark') return 'Postmark message stream';
  if (provider === 'ses') return 'SES region/configuration set';
  return 'scope';
}
