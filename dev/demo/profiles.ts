// The two profiles of the runner, `npm run demo` and `npm run chaos` (the same harness; chaos turns every
// fault on at full strength), the defaults that --operators, --cluster and --failover turn on, and the
// sandbox's fault plan for a mix of faults.
import type { FaultRate } from '../../packages/sandbox/src/faults';
import type {
  ClusterSettings,
  FailoverSettings,
  FaultMix,
  OperatorSettings,
  ProviderChangeSettings,
  RunOptions,
} from './runOptions';
import { VERIFICATION_PROFILES } from './verificationOptions';

/** How long a hang holds the answer back: long past the runner's 2 s MAIL_HEADERS_TIMEOUT_MS, so the worker gives up first. */
export const HANG_MS = 10_000;
/**
 * How long a slow answer takes: well inside the 2 s headers timeout, so the send is accepted as usual, but it
 * stays in flight long enough for an operator's act (a resolve, a cancel, an activity pause) to meet it.
 */
export const SLOW_MS = 800;

export const NO_FAULTS: FaultMix = {
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

/** What --cluster turns on, unless a flag says otherwise. */
export const CLUSTER_DEFAULTS = {
  cluster: { actEveryMs: 15_000, downForMs: 10_000 } satisfies ClusterSettings,
  /** Three workers, the demo's fleet (and the failover run's). */
  workers: 3,
};

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

/**
 * What --provider-change turns on, unless a flag says otherwise: the failover pair without its outage, under
 * the usual faults, with orders started slowly enough that both changes fall while orders flow.
 */
export const PROVIDER_CHANGE_DEFAULTS = {
  providerChange: {
    drainAtMs: 20_000,
    rotateKeyAtMs: 50_000,
    waitForUnboundMs: 600_000,
  } satisfies ProviderChangeSettings,
  faults: {
    acceptThenDrop: 0.1,
    serverError: 0.04,
    unavailable: 0.03,
    dropWithoutProcessing: 0.02,
  } satisfies Partial<FaultMix>,
  /**
   * Starts per second of each of the three clients (each starts every order, in its own order): 300 orders
   * take up to 10 min to start, so orders still flow after the change's four rolls (each about 40 s to a
   * minute at a load of 20 or more).
   */
  startRate: 0.5,
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
    sendHold: null,
    upgrade: null,
    sendOutage: null,
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
    sendHold: null,
    upgrade: null,
    sendOutage: null,
    sweepEveryMs: 0,
    seed: 1,
    timeoutMs: 1_800_000,
    keep: false,
    json: false,
  },
};

/** How long the sandbox holds a slow and a hung answer (the upgrade run's shaped load holds them longer). */
export interface AnswerTimes {
  slowMs: number;
  hangMs: number;
}

/** The sandbox's fault plan for a mix. */
export function faultRates(
  mix: FaultMix,
  times: AnswerTimes = { slowMs: SLOW_MS, hangMs: HANG_MS },
): FaultRate[] {
  const rates: FaultRate[] = [
    { fault: { kind: 'accept-then-drop' }, probability: mix.acceptThenDrop },
    // Answered long after the worker's headers timeout: the worker sees a timeout, the customer a mail.
    { fault: { kind: 'accept-then-hang', ms: times.hangMs }, probability: mix.hang },
    { fault: { kind: 'status', status: 500 }, probability: mix.serverError / 2 },
    { fault: { kind: 'status', status: 502, record: true }, probability: mix.serverError / 2 },
    { fault: { kind: 'status', status: 429, retryAfterSeconds: 1 }, probability: mix.tooManyRequests },
    { fault: { kind: 'status', status: 503 }, probability: mix.unavailable },
    { fault: { kind: 'drop-without-processing' }, probability: mix.dropWithoutProcessing },
    { fault: { kind: 'accept-then-hang', ms: times.slowMs }, probability: mix.slow },
  ];
  return rates.filter((entry) => entry.probability > 0);
}
