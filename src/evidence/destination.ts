// WHERE AN ATTEMPT WENT (docs/design.md, "What counts as evidence"). The dispatch fence records it with the
// attempt (migration 0015); every lookup about that attempt is asked of it, never of whatever the asking worker
// is configured for today. A worker whose own destination differs (another provider, origin, Mailgun domain,
// Postmark message stream or API key) cannot ask the place the request went, so its lookup could only come
// back empty: that is "cannot tell", never "not sent". Pure: the fence, the verify activity, the sweep and the
// tests share it.
import { createHash } from 'node:crypto';

export interface SendDestination {
  /** The provider adapter the request went through: generic, postmark, mailgun, sendgrid, resend or smtp. */
  provider: string;
  /** Scheme, host and port of the API (a Mailgun region is its own origin), or smtp://host:port. */
  origin: string;
  /** Where inside the provider's account: the Mailgun sending domain, the Postmark message stream; else null. */
  scope: string | null;
  /**
   * A fingerprint of the credential the request carried (credentialFingerprint), never the secret itself:
   * a different key may belong to another account or server, which holds none of this key's messages.
   */
  credentialFingerprint: string | null;
  /**
   * The provider account the request was sent from, where the provider's events name it (SES: the account id,
   * migration 0052); else null or absent. Null on SES attempts dispatched before it was recorded.
   */
  account?: string | null;
}

/**
 * A short, one-way fingerprint of an API key: enough to tell two keys apart, useless for finding the key. The
 * label keeps it from being the plain hash of the key that another system might also store.
 */
export function credentialFingerprint(secret: string): string {
  const digest = createHash('sha256')
    .update(`order-confirmation-mail credential\u0000${secret}`)
    .digest('hex');
  return `sha256:${digest.slice(0, 16)}`;
}

/** The SES configuration set a destination's scope (`<region>/<configuration set>`) names; null for others. */
export function sesConfigurationSetOf(destination: SendDestination): string | null {
  if (destination.provider !== 'ses' || destination.scope === null) return null;
  const slash = destination.scope.indexOf('/');
  return slash < 0 ? null : destination.scope.slice(slash + 1);
}

/** The origin (scheme://host:port) of a base URL; the path prefix is not part of where a request went. */
export function originOf(baseUrl: string): string {
  return new URL(baseUrl).origin;
}

/** Where requests made with this Mail API configuration go: what the fence records, what a verifier can ask. */
export function destinationOfMailApi(config: {
  provider: string;
  baseUrl: string;
  apiKey: string;
  mailgunDomain?: string | null;
  postmarkMessageStream?: string;
  /** SES: its region and configuration set, and what identifies its credentials (awsCredentialIdentity). */
  ses?: { region: string; configurationSet: string; accountId: string; credentialIdentity: string } | null;
}): SendDestination {
  if (config.provider === 'ses' && config.ses !== undefined && config.ses !== null) {
    // A configuration set lives in one region: the pair says where the request's events come from.
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

/**
 * Why a worker whose destination is `asking` cannot ask about a request that went to `recorded`, or null when
 * it can (same provider, origin, scope and credential). A destination that was not recorded (an attempt
 * dispatched before migration 0015, or by a transport that names none) cannot be asked about either.
 */
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
  // An attempt recorded before its account was (NULL) is taken to be this worker's, as its events are judged.
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
