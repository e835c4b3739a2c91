// The two profiles of the runner and the flags that change them. `npm run demo` and `npm run chaos` are the
// same harness; chaos turns every fault on at full strength.
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { FaultRate } from '../sandbox/faults';
import {
  applyVerificationFlag,
  VERIFICATION_PROFILES,
  VERIFICATION_USAGE,
  type VerificationRunOptions,
} from './verificationOptions';

/** How the runner's workers send: to the HTTP Mail API sandbox, or over SMTP to the SMTP fault sandbox. */
export type MailTransportName = 'http' | 'smtp';
export const MAIL_TRANSPORTS: readonly MailTransportName[] = ['http', 'smtp'];

/** How long a hang holds the answer back: long past the runner's 2 s MAIL_HEADERS_TIMEOUT_MS, so the worker gives up first. */
export const HANG_MS = 10_000;
/**
 * How long a slow answer takes: well inside the 2 s headers timeout, so the send is accepted as usual, but it
 * stays in flight long enough for an operator's act (a resolve, a cancel, an activity pause) to meet it.
 */
export const SLOW_MS = 800;

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

/** What --cluster turns on, unless a flag says otherwise. */
export const CLUSTER_DEFAULTS = {
  cluster: { actEveryMs: 15_000, downForMs: 10_000 } satisfies ClusterSettings,
  /** The brief's fleet: three workers. */
  workers: 3,
};

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

/** What --failover turns on, unless a flag says otherwise. */
export const FAILOVER_DEFAULTS = {
  failover: {
    outageAtMs: 10_000,
    outageForMs: 60_000,
    skipAfterFailures: 3,
    skipForMs: 5_000,
  } satisfies FailoverSettings,
  /** Accept-then-drop on both providers throughout; the outage is the other fault. */
  acceptThenDrop: 0.1,
  workers: 3,
};

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

const NO_FAULTS: FaultMix = {
  acceptThenDrop: 0,
  hang: 0,
  serverError: 0,
  tooManyRequests: 0,
  unavailable: 0,
  dropWithoutProcessing: 0,
  slow: 0,
};

/** What --operators turns on, unless a flag says otherwise. */
export const OPERATOR_DEFAULTS = {
  operators: { everyMs: 250, unpauseWithinMs: 4_000 } satisfies OperatorSettings,
  /** A quarter of the sends answered slowly, so in-flight sends exist for an operator to meet. */
  slow: 0.25,
  sweepEveryMs: 15_000,
};

export const PROFILES: Record<RunOptions['profile'], RunOptions> = {
  demo: {
    profile: 'demo',
    transport: 'http',
    inbox: true,
    orders: 200,
    workers: 3,
    clients: 3,
    startRate: 0,
    workerConcurrency: 100,
    policy: 'assume-sent',
    verification: VERIFICATION_PROFILES.demo,
    faults: {
      acceptThenDrop: 0.03,
      hang: 0.01,
      serverError: 0.02,
      tooManyRequests: 0.02,
      unavailable: 0.02,
      dropWithoutProcessing: 0,
      slow: 0,
    },
    refuseEveryMs: 0,
    refuseForMs: 1_500,
    killEveryMs: 0,
    restartPostgresAt: null,
    restartTemporalAt: null,
    operators: null,
    cluster: null,
    failover: null,
    sweepEveryMs: 0,
    seed: 1,
    timeoutMs: 300_000,
    keep: false,
    json: false,
  },
  chaos: {
    profile: 'chaos',
    transport: 'http',
    // 2,000 mails are for counting, not for reading; --inbox adds it.
    inbox: false,
    orders: 2_000,
    workers: 4,
    clients: 3,
    // Orders as a stream: a burst of 2,000 would put every workflow on the workers that the next kills hit.
    startRate: 5,
    // Each kill then interrupts at most this many activities, each of which waits out its timeout.
    workerConcurrency: 20,
    policy: 'assume-sent',
    verification: VERIFICATION_PROFILES.chaos,
    faults: {
      acceptThenDrop: 0.12,
      hang: 0.04,
      serverError: 0.04,
      tooManyRequests: 0.04,
      unavailable: 0.03,
      dropWithoutProcessing: 0.02,
      slow: 0,
    },
    refuseEveryMs: 15_000,
    refuseForMs: 1_500,
    killEveryMs: 5_000,
    restartPostgresAt: 0.35,
    restartTemporalAt: 0.65,
    operators: null,
    cluster: null,
    failover: null,
    sweepEveryMs: 0,
    seed: 1,
    timeoutMs: 1_800_000,
    keep: false,
    json: false,
  },
};

export const USAGE = `Usage: npm run demo -- [flags]     (the demo profile)
       npm run chaos -- [flags]    (the chaos profile: every fault at full strength)

  --profile demo|chaos          start from this profile (set by the npm scripts)
  --transport http|smtp         send through the HTTP Mail API sandbox (default) or over SMTP to the SMTP
                                fault sandbox; the fault flags below then mean the SMTP faults in [brackets]
  --inbox / --no-inbox          start MailDev and relay every accepted mail to it (demo on, chaos off)
  --orders N                    orders to create and send (demo 200, chaos 2000)
  --workers N                   worker processes (demo 3, chaos 4)
  --clients N                   client processes; each starts every order once (3)
  --start-rate N                starts per second of each client, 0 = unpaced (demo 0, chaos 5)
  --worker-concurrency N        activities one worker runs at once (demo 100, chaos 20)
  --policy assume-sent|assume-failed   UNKNOWN_OUTCOME_POLICY of the workers (assume-sent)
  --accept-then-drop RATE       share of requests accepted, then the connection closed unanswered
                                [message kept, socket closed before the 250 after the final '.']
  --hang RATE                   accepted, answered only after the client gave up  [250 held back 10 s]
  --5xx RATE                    500 (not processed) or 502 (processed), half each  [451 after the data]
  --429 RATE                    429 with Retry-After: 1  [451 at RCPT, greylisting]
  --503 RATE                    503  [421 greeting]
  --drop RATE                   connection closed before anything was processed  [closed before DATA]
  --slow RATE                   accepted and answered after ${SLOW_MS} ms, inside the client's deadline: no fault,
                                a send in flight for a while  [250 after ${SLOW_MS} ms] (0; 25% with --operators)
  --no-faults                   all of the rates above 0
${VERIFICATION_USAGE}
  --refuse-every S / --refuse-for S   refuse connections for a while, periodically (0 = off)
  --kill-every S                SIGKILL a random worker every S seconds and start another (0 = off)
  --restart-postgres AT         restart Postgres once AT (0..1) of the orders are done ('off' = never)
  --restart-temporal AT         restart the Temporal dev server (with its db file) likewise; with --cluster,
                                every host of the cluster at once
  --cluster                     cluster chaos: the Temporal server as a cluster of processes on the run's
                                Postgres (two frontends behind one address, two history hosts on 16 shards,
                                two matching hosts, the worker service; needs the stack's tools, setup.sh
                                --stack) and, while orders flow, at random moments: a history host SIGKILLed
                                and started again, a matching host likewise, a frontend restarted, a rolling
                                restart of every host. The report counts each act and the workflow and
                                activity tasks the server redelivered (3 workers unless --workers)
  --cluster-every S             mean pause between two acts on the cluster (15; 0 = the cluster, no acts)
  --cluster-down-for S          how long a killed host stays down, at most (10)
  --operators                   operator chaos: while orders flow, an operator acts on random in-flight orders
                                through the real Temporal API and temporal CLI and through npm run ops: workflow
                                cancel, terminate, reset to the first and to the last workflow task; pause,
                                unpause, reset and update-options (more attempts) of the send activity; ops
                                retry and ops resolve, and resolve-as-failed-then-retry re-sends. Every paused
                                send is unpaused. Ends with a reconciliation sweep; the report counts every act
  --operator-every S            mean pause between two operator acts (0.25)
  --sweep-every S               run the reconciliation sweep's Schedule every S seconds during the run
                                (0 = no Schedule; 15 with --operators)
  --failover                    failover chaos: MAIL_PROVIDERS=postmark,mailgun, each its own sandbox, both verified
                                by lookup; accept-then-drop on both throughout (--accept-then-drop, 0.1) and, mid-run,
                                postmark down for a window (refused, then 503, then accept-then-drop, a third each).
                                No other faults, kills or restarts unless flags ask. The report counts per provider
                                the mails it received and the attempts that failed over, and why (3 workers)
  --outage-at S / --outage-for S   when the primary goes down after the first start, and for how long (10 / 60)
  --seed N                      seed of the sandbox's fault draws and of the operator's choices
  --timeout S                   give up waiting after S seconds (the report then shows what is missing)
  --keep                        leave everything running after the report, until Ctrl-C
  --json                        print the report as JSON on stdout (everything else goes to stderr)
  -h, --help

Environment: DATABASE_URL and TEMPORAL_ADDRESS (+ TEMPORAL_NAMESPACE) use servers you already run instead
of starting embedded Postgres and a Temporal dev server; their restarts are then skipped.`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'ERR_DEMO_USAGE';
}

export function parseRunOptions(argv: string[]): RunOptions | 'help' {
  const profileIndex = argv.indexOf('--profile');
  const profileName = profileIndex >= 0 ? argv[profileIndex + 1] : 'demo';
  if (profileName !== 'demo' && profileName !== 'chaos') {
    throw new UsageError(`--profile must be demo or chaos (got ${String(profileName)})`);
  }
  const base = PROFILES[profileName];
  const options: RunOptions = { ...base, faults: { ...base.faults }, verification: { ...base.verification } };
  // --operators changes defaults that a flag of their own may still set, before or after it.
  const given = new Set<string>();
  let operatorEveryMs: number | null = null;
  let clusterEveryMs: number | null = null;
  let clusterDownForMs: number | null = null;
  let outageAtMs: number | null = null;
  let outageForMs: number | null = null;

  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = (): string => {
      const next = argv[index + 1];
      if (next === undefined) throw new UsageError(`${flag} needs a value`);
      index += 1;
      return next;
    };
    switch (flag) {
      case '-h':
      case '--help':
        return 'help';
      case '--profile':
        value();
        break;
      case '--transport': {
        const transport = value();
        if (!(MAIL_TRANSPORTS as readonly string[]).includes(transport)) {
          throw new UsageError(`--transport must be one of ${MAIL_TRANSPORTS.join(', ')} (got ${transport})`);
        }
        options.transport = transport as MailTransportName;
        break;
      }
      case '--inbox':
        options.inbox = true;
        break;
      case '--no-inbox':
        options.inbox = false;
        break;
      case '--orders':
        options.orders = positiveInteger(flag, value());
        break;
      case '--clients':
        options.clients = positiveInteger(flag, value());
        break;
      case '--start-rate':
        options.startRate = nonNegativeNumber(flag, value());
        break;
      case '--worker-concurrency':
        options.workerConcurrency = positiveInteger(flag, value());
        break;
      case '--policy': {
        const policy = value();
        if (!(UNKNOWN_OUTCOME_POLICIES as readonly string[]).includes(policy)) {
          throw new UsageError(`--policy must be one of ${UNKNOWN_OUTCOME_POLICIES.join(', ')}`);
        }
        options.policy = policy as UnknownOutcomePolicy;
        break;
      }
      case '--accept-then-drop':
        options.faults.acceptThenDrop = rate(flag, value());
        given.add(flag);
        break;
      case '--hang':
        options.faults.hang = rate(flag, value());
        break;
      case '--5xx':
        options.faults.serverError = rate(flag, value());
        break;
      case '--429':
        options.faults.tooManyRequests = rate(flag, value());
        break;
      case '--503':
        options.faults.unavailable = rate(flag, value());
        break;
      case '--drop':
        options.faults.dropWithoutProcessing = rate(flag, value());
        break;
      case '--slow':
        options.faults.slow = rate(flag, value());
        given.add(flag);
        break;
      case '--no-faults':
        options.faults = { ...NO_FAULTS };
        given.add('--slow');
        break;
      case '--operators':
        options.operators = { ...OPERATOR_DEFAULTS.operators };
        break;
      case '--operator-every':
        operatorEveryMs = seconds(flag, value());
        if (operatorEveryMs <= 0) throw new UsageError(`${flag} must be more than 0 seconds`);
        break;
      case '--cluster':
        options.cluster = { ...CLUSTER_DEFAULTS.cluster };
        break;
      case '--cluster-every':
        clusterEveryMs = seconds(flag, value());
        break;
      case '--cluster-down-for':
        clusterDownForMs = seconds(flag, value());
        break;
      case '--failover':
        options.failover = { ...FAILOVER_DEFAULTS.failover };
        given.add(flag);
        break;
      case '--outage-at':
        outageAtMs = seconds(flag, value());
        break;
      case '--outage-for':
        outageForMs = seconds(flag, value());
        if (outageForMs < 3_000) throw new UsageError(`${flag} must be at least 3 seconds (three phases)`);
        break;
      case '--workers':
        options.workers = positiveInteger(flag, value());
        given.add(flag);
        break;
      case '--sweep-every':
        options.sweepEveryMs = seconds(flag, value());
        given.add(flag);
        break;
      case '--refuse-every':
        options.refuseEveryMs = seconds(flag, value());
        break;
      case '--refuse-for':
        options.refuseForMs = seconds(flag, value());
        break;
      case '--kill-every':
        options.killEveryMs = seconds(flag, value());
        break;
      case '--restart-postgres':
        options.restartPostgresAt = share(flag, value());
        break;
      case '--restart-temporal':
        options.restartTemporalAt = share(flag, value());
        break;
      case '--seed':
        options.seed = positiveInteger(flag, value());
        break;
      case '--timeout':
        options.timeoutMs = seconds(flag, value());
        break;
      case '--keep':
        options.keep = true;
        break;
      case '--json':
        options.json = true;
        break;
      default:
        if (applyVerificationFlag(options.verification, flag, value, (message) => new UsageError(message)))
          break;
        throw new UsageError(`unknown flag ${flag}`);
    }
  }
  if (options.operators !== null) {
    if (operatorEveryMs !== null) options.operators.everyMs = operatorEveryMs;
    if (!given.has('--slow')) options.faults.slow = OPERATOR_DEFAULTS.slow;
    if (!given.has('--sweep-every')) options.sweepEveryMs = OPERATOR_DEFAULTS.sweepEveryMs;
  } else if (operatorEveryMs !== null) {
    throw new UsageError('--operator-every needs --operators');
  }
  if (options.cluster !== null) {
    if (clusterEveryMs !== null) options.cluster.actEveryMs = clusterEveryMs;
    if (clusterDownForMs !== null) options.cluster.downForMs = clusterDownForMs;
    if (!given.has('--workers')) options.workers = CLUSTER_DEFAULTS.workers;
  } else if (clusterEveryMs !== null || clusterDownForMs !== null) {
    throw new UsageError('--cluster-every and --cluster-down-for need --cluster');
  }
  if (options.failover !== null) {
    if (outageAtMs !== null) options.failover.outageAtMs = outageAtMs;
    if (outageForMs !== null) options.failover.outageForMs = outageForMs;
    applyFailoverDefaults(options, argv, given);
  } else if (outageAtMs !== null || outageForMs !== null) {
    throw new UsageError('--outage-at and --outage-for need --failover');
  }
  const total = (Object.values(options.faults) as number[]).reduce(
    (sum, probability) => sum + probability,
    0,
  );
  if (total > 1) throw new UsageError(`the fault rates add up to ${total}, more than 1`);
  if (options.transport === 'smtp' && options.verification.provider !== 'generic') {
    throw new UsageError('--provider names an HTTP provider; it does not go with --transport smtp');
  }
  if (options.refuseEveryMs > 0 && options.refuseForMs <= 0) {
    throw new UsageError('--refuse-for must be positive when --refuse-every is on');
  }
  return options;
}

/**
 * --failover measures failover, so it starts from a quiet system: accept-then-drop on both providers and the
 * outage, no other fault, kill or restart, unless a flag of the command line asks for one.
 */
function applyFailoverDefaults(options: RunOptions, argv: string[], given: Set<string>): void {
  const asked = (flag: string) => argv.includes(flag);
  const faultFlags: [string, keyof FaultMix][] = [
    ['--hang', 'hang'],
    ['--5xx', 'serverError'],
    ['--429', 'tooManyRequests'],
    ['--503', 'unavailable'],
    ['--drop', 'dropWithoutProcessing'],
    ['--slow', 'slow'],
  ];
  for (const [flag, key] of faultFlags) if (!asked(flag)) options.faults[key] = 0;
  if (!given.has('--accept-then-drop')) options.faults.acceptThenDrop = FAILOVER_DEFAULTS.acceptThenDrop;
  if (!given.has('--workers')) options.workers = FAILOVER_DEFAULTS.workers;
  if (!asked('--kill-every')) options.killEveryMs = 0;
  if (!asked('--refuse-every')) options.refuseEveryMs = 0;
  if (!asked('--restart-postgres')) options.restartPostgresAt = null;
  if (!asked('--restart-temporal')) options.restartTemporalAt = null;
  if (options.transport !== 'http') throw new UsageError('--failover sends over HTTP to two providers');
  if (options.operators !== null || options.cluster !== null) {
    throw new UsageError('--failover runs alone: not with --operators or --cluster');
  }
}

/** The sandbox's fault plan for a mix. */
export function faultRates(mix: FaultMix): FaultRate[] {
  const rates: FaultRate[] = [
    { fault: { kind: 'accept-then-drop' }, probability: mix.acceptThenDrop },
    // Answered long after the worker's headers timeout: the worker sees a timeout, the customer a mail.
    { fault: { kind: 'accept-then-hang', ms: HANG_MS }, probability: mix.hang },
    { fault: { kind: 'status', status: 500 }, probability: mix.serverError / 2 },
    { fault: { kind: 'status', status: 502, record: true }, probability: mix.serverError / 2 },
    { fault: { kind: 'status', status: 429, retryAfterSeconds: 1 }, probability: mix.tooManyRequests },
    { fault: { kind: 'status', status: 503 }, probability: mix.unavailable },
    { fault: { kind: 'drop-without-processing' }, probability: mix.dropWithoutProcessing },
    { fault: { kind: 'accept-then-hang', ms: SLOW_MS }, probability: mix.slow },
  ];
  return rates.filter((entry) => entry.probability > 0);
}

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new UsageError(`${flag} must be a positive integer`);
  return value;
}

function nonNegativeNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!(value >= 0) || !Number.isFinite(value)) throw new UsageError(`${flag} must be a number >= 0`);
  return value;
}

function rate(flag: string, text: string): number {
  const value = Number(text.endsWith('%') ? Number(text.slice(0, -1)) / 100 : text);
  if (!(value >= 0 && value <= 1)) throw new UsageError(`${flag} must be a rate from 0 to 1 (or 0% to 100%)`);
  return value;
}

function seconds(flag: string, text: string): number {
  const value = Number(text);
  if (!(value >= 0) || !Number.isFinite(value))
    throw new UsageError(`${flag} must be a number of seconds >= 0`);
  return Math.round(value * 1000);
}

function share(flag: string, text: string): number | null {
  if (text === 'off') return null;
  const value = Number(text);
  if (!(value >= 0 && value <= 1)) throw new UsageError(`${flag} must be a share from 0 to 1, or off`);
  return value;
}
