// What one run of the runner is asked to do (`npm run demo`, `npm run chaos` and their flags): the options'
// shape. The two profiles and the defaults each flag turns on are in profiles.ts; parsing the command line is
// options.ts.
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationRunOptions } from './verificationOptions';

/** How the runner's workers send: to the HTTP Mail API sandbox, or over SMTP to the SMTP fault sandbox. */
export type MailTransportName = 'http' | 'smtp';
export const MAIL_TRANSPORTS: readonly MailTransportName[] = ['http', 'smtp'];

export interface FaultMix {
  acceptThenDrop: number;
  hang: number;
  /** 500 (nothing processed) and 502 after processing, half each: both are unknown outcomes. */
  serverError: number;
  /** 429 with Retry-After: 1, and 503: definitely not sent. */
  tooManyRequests: number;
  unavailable: number;
  /** The socket closes before the provider processed anything (looks like accept-then-drop to the client). */
  dropWithoutProcessing: number;
  /** Accepted and answered after SLOW_MS: no fault for the customer, only a send that stays in flight a while. */
  slow: number;
}

/** The operator-chaos run (--operators): an operator's real acts on random in-flight orders (dev/demo/operators.ts). */
export interface OperatorSettings {
  /** Mean pause between two acts; each next moment is drawn at random between half and one and a half of it. */
  everyMs: number;
  /** How long a paused send activity stays paused before the operator unpauses it (at most). */
  unpauseWithinMs: number;
}

/** Cluster chaos (--cluster): the Temporal server as a cluster of processes, and acts on its hosts. */
export interface ClusterSettings {
  /**
   * Mean pause between the end of one act on the cluster and the start of the next (a history host SIGKILLed and
   * started again, a matching host likewise, a frontend restarted, every host restarted in turn); each pause
   * is drawn at random between half and one and a half of it. 0: the cluster only, no acts.
   */
  actEveryMs: number;
  /** How long a SIGKILLed host stays down before it is started again, at most (drawn from a third of it up). */
  downForMs: number;
}

/** Failover chaos (--failover): postmark first, mailgun second; the primary down for a window mid-run. */
export interface FailoverSettings {
  /** When the outage starts, after the first order was started. */
  outageAtMs: number;
  /** How long it lasts: a third refused connections, a third 503s, a third accept-then-drop. */
  outageForMs: number;
  /** MAIL_PROVIDER_SKIP_AFTER_FAILURES and MAIL_PROVIDER_SKIP_FOR_MS of the workers. */
  skipAfterFailures: number;
  skipForMs: number;
}

/**
 * The upgrade run (--upgrade-at, --upgrade-every): 2.0 → N → N+1 ramping → N+1 → back to N
 * (dev/demo/upgradeAct.ts).
 */
export interface UpgradeSettings {
  /** When build N becomes current, after the first start (or once its workers poll, if later). */
  atMs: number;
  /**
   * From one switch to the next: N+1 ramps once 2.0's runs drained and at least everyMs after N's switch, becomes
   * current one period later, and N is current again one period after that.
   */
  everyMs: number;
  /** The share of new runs N+1 gets while it ramps, percent (UPGRADE_RAMP_PERCENTAGE). */
  rampPercentage: number;
  deploymentName: string;
  /**
   * True: the shaped load of dev/demo/upgradeLoad.ts (runs of the build being left in each place at a switch);
   * false (--upgrade-plain-load): the chaos profile's own faults, slots, deadlines and settle delay.
   */
  shapedLoad: boolean;
  /**
   * The least open runs of the build being left, in each of claimed, mid-send, settle delay and not-sent backoff,
   * at every switch (the invariant old-runs-per-state-at-switch); 0 = counted, not asked.
   */
  minPerState: number;
}

/**
 * --provider-change: the failover pair under the usual faults, with the documented provider changes mid-run
 * (dev/demo/providerChange.ts): postmark drained at `drainAtMs` (a rolling restart), then mailgun's key
 * rotated from `rotateKeyAtMs` (docs/operating.md#draining-a-provider). No primary outage.
 */
export interface ProviderChangeSettings {
  drainAtMs: number;
  rotateKeyAtMs: number;
  /** How long the rotation waits for `provider status` to show nothing bound to the old key. */
  waitForUnboundMs: number;
}

/** A hold mid-run (--hold-at, --hold-for): every send held by an operator, then resumed (dev/demo/sendHoldAct.ts). */
export interface SendHoldSettings {
  /** When hold is asked for, after the first order was started. */
  atMs: number;
  /** How long from hold's return to resume. */
  forMs: number;
}

/**
 * --send-outage: once every order has started, every send is dropped before the provider (the connection dies
 * after the request was written; nothing is recorded) for `forMs`, then the provider is healthy again. The
 * lookups keep answering. A quiet system otherwise, at the product's settle delays (dev/demo/sendOutage.ts).
 */
export interface SendOutageSettings {
  forMs: number;
}

export interface StartStep {
  fromMs: number;
  rate: number;
}

export interface RunOptions {
  profile: 'demo' | 'chaos';
  transport: MailTransportName;
  /** Start MailDev and relay every accepted mail to it (on in the demo; the chaos profile leaves it off). */
  inbox: boolean;
  orders: number;
  workers: number;
  clients: number;
  /** Starts per second of each client process; 0 = as fast as Temporal answers. */
  startRate: number;
  /**
   * A start rate that changes during the run (the upgrade run's shaped load, dev/demo/upgradeLoad.ts): from
   * `fromMs` after the first start, `rate` starts per second, until the next step. Unset: startRate throughout.
   */
  startSteps?: StartStep[];
  /** WORKER_MAX_CONCURRENT_ACTIVITIES of each worker. */
  workerConcurrency: number;
  policy: UnknownOutcomePolicy;
  /** The provider, and how unknown outcomes are verified with it (dev/demo/verificationOptions.ts). */
  verification: VerificationRunOptions;
  faults: FaultMix;
  /** Stop listening for refuseForMs every refuseEveryMs; 0 = never. */
  refuseEveryMs: number;
  refuseForMs: number;
  /** SIGKILL a random worker every killEveryMs and start a new one; 0 = never. */
  killEveryMs: number;
  /** Restart Postgres / the Temporal dev server once, when this share of the orders is done; null = never. */
  restartPostgresAt: number | null;
  restartTemporalAt: number | null;
  /** Null: no operator acts (the plain demo and chaos runs). */
  operators: OperatorSettings | null;
  /** Null: the Temporal dev server, one process (every profile but --cluster). */
  cluster: ClusterSettings | null;
  /** Null: one provider (every profile but --failover). */
  failover: FailoverSettings | null;
  /** Null or absent: no provider change (every profile but --provider-change, which sets `failover` too). */
  providerChange?: ProviderChangeSettings | null;
  /** Null: no hold (every profile unless --hold-at is given). */
  sendHold: SendHoldSettings | null;
  upgrade: UpgradeSettings | null;
  /** Null: no send outage (every profile but --send-outage). */
  sendOutage: SendOutageSettings | null;
  /**
   * Every how often the reconciliation sweep's Schedule runs during the run (its real Schedule, on the run's
   * task queue); 0 = no Schedule. Whatever this says, a run with operators ends with a sweep of its own.
   */
  sweepEveryMs: number;
  seed: number;
  timeoutMs: number;
  keep: boolean;
  json: boolean;
}
