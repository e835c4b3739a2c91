// The runner's verification flags: which provider the workers send to (the sandbox emulates each), whether
// they verify unknown outcomes with it, how long they wait before asking, and the faults of the verification
// path itself (lookups that fail, webhooks lost or delivered twice). Kept apart from options.ts, which parses
// the runner's other flags.
import {
  MAIL_PROVIDER_FACTS,
  MAIL_PROVIDER_NAMES,
  type MailProviderName,
} from '../../src/mail/providers/mailProvider';
import { DEFAULT_INDEXING_LAG_MS } from '../../packages/sandbox/src/lookups';
import { REORDER_WATERMARKS, type ReorderWatermark } from '../../packages/sandbox/src/lookupReorder';

export interface VerificationRunOptions {
  /** The provider the workers are configured for; the HTTP sandbox emulates it. */
  provider: MailProviderName;
  /** MAIL_VERIFY: ask the provider before the policy settles an unknown outcome (where it can be asked). */
  verify: boolean;
  /**
   * MAIL_VERIFY_SETTLE_DELAY_MS of the workers. The providers' documented delays (30 s to 30 min) are for real
   * providers; the sandbox indexes within its lag (1 s), so the runner waits a few times that.
   */
  settleDelayMs: number;
  /** Share of lookups that fail: half answer 503, half hang past the lookup's deadline. */
  lookupFaults: number;
  /** Share of webhook events the sandbox never posts, and of those it posts twice. */
  webhookLoss: number;
  webhookDuplicates: number;
  /**
   * --lying-provider: the sandbox's lookups lie (packages/sandbox/src/lookupLies.ts), each kind in
   * LYING_LOOKUP_SHARE of lookups, the lag ones twice the settle delay behind, and with a provider that posts
   * webhooks (Mailgun, SendGrid) LYING_WEBHOOK_SHARE of the messages are followed by a webhook lie
   * (packages/sandbox/src/webhookLies.ts); the report counts every lie and how it and its order were settled.
   */
  lyingProvider: boolean;
  /**
   * The webhook receiver stops (connections refused) this long after the first start, for this long, then
   * comes back on the same port (--receiver-outage-at / --receiver-outage-for); null for none.
   */
  receiverOutage: { atMs: number; forMs: number } | null;
  /** The receiver's WEBHOOK_MAX_AGE_MS (--webhook-max-age; 300 s, the product's default). */
  webhookMaxAgeMs: number;
  /** SES: the seconds between SNS's retries of an event, 59 of them (--sns-retry-every; 60, the documented policy). */
  snsRetryEveryS: number;
  /**
   * --lookup-reorder S: the lookups show every faulted send, and a share of the others, only S after it was taken,
   * and later ones at once (packages/sandbox/src/lookupReorder.ts); null for an index in the order taken.
   */
  lookupReorder: { holdMs: number; share: number; watermark: ReorderWatermark } | null;
}

/** --reorder-share's default: a fifth of the sends taken without a fault are shown late too. */
export const DEFAULT_REORDER_SHARE = 0.2;

/**
 * SES under --lying-provider: the share of sends SES answered without taking them (5xx, dropped before
 * processing) that are followed by an SNS lie. Half: these are the lies that would cost a mail if believed.
 */
export const LYING_NOT_TAKEN_SHARE = 0.5;

/** The share of lookups that tell each kind of lie about one answer under --lying-provider (five kinds). */
export const LYING_LOOKUP_SHARE = 0.04;
/**
 * The share of lookups that start a lie about the provider's state ('lag', 'wrong-domain'), which then holds for
 * every lookup for twice the settle delay. Ten times rarer: at 4% and ten lookups a second, one of the two would
 * be in force most of the time, a provider that is wrong for everyone, where only the policy can decide.
 */
export const LYING_WINDOW_SHARE = 0.004;

/**
 * The share of the messages the sandbox took that it follows with one webhook lie under --lying-provider
 * (a kind drawn evenly from the seven of packages/sandbox/src/webhookLies.ts), with a provider that posts
 * webhooks.
 */
export const LYING_WEBHOOK_SHARE = 0.2;

export const DEFAULT_RUN_SETTLE_DELAY_MS = 3 * DEFAULT_INDEXING_LAG_MS;

export const VERIFICATION_PROFILES: Record<'demo' | 'chaos', VerificationRunOptions> = {
  demo: {
    provider: 'generic',
    verify: true,
    settleDelayMs: DEFAULT_RUN_SETTLE_DELAY_MS,
    lookupFaults: 0,
    webhookLoss: 0,
    webhookDuplicates: 0,
    lyingProvider: false,
    receiverOutage: null,
    webhookMaxAgeMs: 300_000,
    snsRetryEveryS: 60,
    lookupReorder: null,
  },
  chaos: {
    provider: 'generic',
    verify: true,
    settleDelayMs: DEFAULT_RUN_SETTLE_DELAY_MS,
    lookupFaults: 0.04,
    webhookLoss: 0.02,
    webhookDuplicates: 0.1,
    lyingProvider: false,
    receiverOutage: null,
    webhookMaxAgeMs: 300_000,
    snsRetryEveryS: 60,
    lookupReorder: null,
  },
};

export const VERIFICATION_USAGE = `  --provider NAME               the provider the workers send to, emulated by the sandbox: ${MAIL_PROVIDER_NAMES.join(', ')} (generic)
  --verify / --no-verify        verify unknown outcomes with the provider before the policy decides (on)
  --settle-delay S              how long after an unknown outcome the workers wait before asking (3)
  --lookup-faults RATE          share of lookups that fail, half 503, half hung (demo 0, chaos 0.04)
  --webhook-loss RATE / --webhook-duplicates RATE   webhook events never posted / posted twice (chaos 0.02 / 0.1)
  --lying-provider              the sandbox's lookups lie: pages, ignored filters, other orders and deployments,
                                a lag of twice the settle delay, failures, another domain's answer (4% each; 0.4% start a lag or
                                another domain's answer that lasts twice the settle delay); with mailgun or sendgrid, 20% of
                                the messages are followed by a webhook lie: forged, replayed, stale, oversized, malformed,
                                another order's, strangers' events; with ses, 20% of the messages and half of the sends SES did
                                not take are followed by an SNS lie: forged certificate hosts and paths, a forged signature, a
                                stale Timestamp, events from another account or configuration set (packages/sandbox/src/snsLies.ts)
  --receiver-outage-at S / --receiver-outage-for S   the webhook receiver refuses connections from S s after the
                                first start, for S s, then comes back on its port (none)
  --webhook-max-age S           the receiver's WEBHOOK_MAX_AGE_MS, in seconds (300)
  --sns-retry-every S           ses: seconds between SNS's 59 retries of an event (60, the delivery policy of docs/providers.md)
  --lookup-reorder S            the lookups show every faulted send and a share of the others S s after it was taken, later
                                ones at once: out of order (none)
  --reorder-share RATE          share of the sends taken without a fault that are shown late too (0.2)
  --reorder-watermark MODE      generic: ${REORDER_WATERMARKS.join(', ')}: a watermark that stops before a hidden send
                                (the contract kept), none, or one past it (the contract broken) (honest)`;

/** Applies one verification flag; returns false when `flag` is not one of them. Throws `usage` errors. */
export function applyVerificationFlag(
  options: VerificationRunOptions,
  flag: string,
  value: () => string,
  usage: (message: string) => Error,
): boolean {
  const rate = (text: string): number => {
    const parsed = Number(text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : text);
    if (!(parsed >= 0 && parsed <= 1)) throw usage(`${flag} must be a rate from 0 to 1 (or 0% to 100%)`);
    return parsed;
  };
  switch (flag) {
    case '--provider': {
      const name = value();
      if (!(MAIL_PROVIDER_NAMES as readonly string[]).includes(name)) {
        throw usage(`--provider must be one of ${MAIL_PROVIDER_NAMES.join(', ')} (got ${name})`);
      }
      options.provider = name as MailProviderName;
      return true;
    }
    case '--verify':
      options.verify = true;
      return true;
    case '--no-verify':
      options.verify = false;
      return true;
    case '--settle-delay': {
      const seconds = Number(value());
      if (!(seconds > 0) || !Number.isFinite(seconds))
        throw usage('--settle-delay must be a number of seconds > 0');
      options.settleDelayMs = Math.round(seconds * 1000);
      return true;
    }
    case '--lookup-faults':
      options.lookupFaults = rate(value());
      return true;
    case '--webhook-loss':
      options.webhookLoss = rate(value());
      return true;
    case '--webhook-duplicates':
      options.webhookDuplicates = rate(value());
      return true;
    case '--lying-provider':
      options.lyingProvider = true;
      return true;
    case '--receiver-outage-at':
    case '--receiver-outage-for': {
      const seconds = Number(value());
      if (!(seconds >= 0) || !Number.isFinite(seconds))
        throw usage(`${flag} must be a number of seconds >= 0`);
      const outage = options.receiverOutage ?? { atMs: 10_000, forMs: 330_000 };
      if (flag === '--receiver-outage-at') outage.atMs = Math.round(seconds * 1000);
      else outage.forMs = Math.round(seconds * 1000);
      options.receiverOutage = outage;
      return true;
    }
    case '--webhook-max-age': {
      const seconds = Number(value());
      if (!(seconds > 0) || !Number.isFinite(seconds)) throw usage(`${flag} must be a number of seconds > 0`);
      options.webhookMaxAgeMs = Math.round(seconds * 1000);
      return true;
    }
    case '--sns-retry-every': {
      const seconds = Number(value());
      if (!(seconds > 0) || !Number.isFinite(seconds)) throw usage(`${flag} must be a number of seconds > 0`);
      options.snsRetryEveryS = seconds;
      return true;
    }
    case '--lookup-reorder': {
      const seconds = Number(value());
      if (!(seconds > 0) || !Number.isFinite(seconds)) throw usage(`${flag} must be a number of seconds > 0`);
      options.lookupReorder = { ...reorderOf(options), holdMs: Math.round(seconds * 1000) };
      return true;
    }
    case '--reorder-share':
      options.lookupReorder = { ...reorderOf(options), share: rate(value()) };
      return true;
    case '--reorder-watermark': {
      const mode = value();
      if (!(REORDER_WATERMARKS as readonly string[]).includes(mode)) {
        throw usage(`${flag} must be one of ${REORDER_WATERMARKS.join(', ')} (got ${mode})`);
      }
      options.lookupReorder = { ...reorderOf(options), watermark: mode as ReorderWatermark };
      return true;
    }
    default:
      return false;
  }
}

/** The reorder settings so far; --reorder-share or --reorder-watermark alone keep the hold at 0 (no reorder). */
function reorderOf(options: VerificationRunOptions): NonNullable<VerificationRunOptions['lookupReorder']> {
  return options.lookupReorder ?? { holdMs: 0, share: DEFAULT_REORDER_SHARE, watermark: 'honest' };
}

/** Whether the workers will verify: asked for, and the provider lets them. */
export function verifies(options: VerificationRunOptions): boolean {
  return options.verify && MAIL_PROVIDER_FACTS[options.provider].verification !== null;
}

/** The webhook-only or webhook-and-lookup providers need the receiver running. */
export function needsWebhookReceiver(options: VerificationRunOptions): boolean {
  return verifies(options) && MAIL_PROVIDER_FACTS[options.provider].verification?.webhook != null;
}
