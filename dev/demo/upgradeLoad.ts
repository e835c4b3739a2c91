// The upgrade run's load (--upgrade-at): shaped so that at every switch many runs of the build being left sit in
// each of the four places a deploy meets them (docs/demo-and-chaos.md, "The upgrade run"):
//   - claimed, not yet dispatched: sends wait for a free activity slot, because each build's workers have
//     fewer slots than its sends need (slow answers hold them);
//   - mid-send: most answers come slowly, well inside the raised client deadline;
//   - waiting out a settle delay: 14% of the sends are accepted and then dropped unanswered, 8% hang;
//   - in a not-sent backoff: 30% answer 429 or 503, and the backoff is a whole switch period.
// One client starts each order once, at a rate that follows the switches (upgradeStartSteps), so that every
// build gets enough new runs before it is left. The delays follow --upgrade-every, so a short period (CI) makes
// a short run of the same shape.
// --upgrade-plain-load leaves the chaos profile's load as it is: none of this applies.
import type { FaultMix, RunOptions, StartStep } from './runOptions';

/** The fault mix: 3% answered at once and accepted; every other request either slow or a fault. */
export const UPGRADE_FAULTS: FaultMix = {
  acceptThenDrop: 0.14,
  hang: 0.08,
  serverError: 0.03,
  tooManyRequests: 0.15,
  unavailable: 0.15,
  dropWithoutProcessing: 0.02,
  slow: 0.4,
};

/** Slots per worker: 3 workers × 21 = 63 sends of one build in flight at most, the rest wait claimed. */
export const UPGRADE_WORKER_CONCURRENCY = 21;

/** The share of new runs N+1 gets while it ramps, before it becomes current. */
export const UPGRADE_RAMP_PERCENTAGE = 50;

/**
 * The share of the orders started in each phase of the rollout, by the time they are due: 2.0 alone until
 * --upgrade-at (its workers must be swamped by then: the highest rate), N current for a period, N+1 ramping
 * for a period (both builds take new runs, and N is left again at its end), N+1 current for a period, and what
 * is left after the rollback, at N's rate. Measured on short runs (docs/demo-and-chaos.md).
 */
export const UPGRADE_START_SHARES = { unversioned: 0.24, n: 0.32, ramp: 0.24, next: 0.17 } as const;

/**
 * The shaped load's start rate per phase for `orders` orders, N current at `atMs`, a switch every `everyMs`:
 * the phases' times are the switches' earliest (N+1 ramps later if 2.0's runs drain slowly). The rates depend
 * only on orders per second of the schedule, so a run with fewer orders and a proportionally shorter period
 * has the same rates and the same shape.
 */
export function upgradeStartSteps(orders: number, atMs: number, everyMs: number): StartStep[] {
  const perSecond = (share: number, ms: number) => Math.round(((share * orders) / (ms / 1000)) * 100) / 100;
  const shares = UPGRADE_START_SHARES;
  return [
    { fromMs: 0, rate: perSecond(shares.unversioned, atMs) },
    { fromMs: atMs, rate: perSecond(shares.n, everyMs) },
    { fromMs: atMs + everyMs, rate: perSecond(shares.ramp, everyMs) },
    { fromMs: atMs + 2 * everyMs, rate: perSecond(shares.next, everyMs) },
    { fromMs: atMs + 3 * everyMs, rate: perSecond(shares.n, everyMs) },
  ];
}

/** The rate in force `elapsedMs` after the first start (the last step's from then on). */
export function startRateAt(steps: StartStep[], elapsedMs: number): number {
  let rate = steps[0]?.rate ?? 0;
  for (const step of steps) if (step.fromMs <= elapsedMs) rate = step.rate;
  return rate;
}

/** At 1,000 orders and more, the least number of old-build runs in each place at each switch, unless given. */
export const UPGRADE_MIN_PER_STATE_AT_1000 = 50;

export function defaultMinPerState(orders: number, shapedLoad = true): number {
  return shapedLoad && orders >= 1_000 ? UPGRADE_MIN_PER_STATE_AT_1000 : 0;
}

/** The shaped load's delays for a run, or null: no upgrade run, or its plain load. */
export function shapedUpgradeTimes(options: Pick<RunOptions, 'upgrade'>): UpgradeTimes | null {
  return options.upgrade?.shapedLoad === true ? upgradeTimes(options.upgrade.everyMs) : null;
}

/** The delays and deadlines of the shaped load, for a switch period of `everyMs`. */
export interface UpgradeTimes {
  /** How long a slow answer takes (the sandbox's --slow), inside the client's headers deadline. */
  slowMs: number;
  /** How long a hang holds the answer: past the client's overall deadline, so the client gives up. */
  hangMs: number;
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  /** SEND_ACTIVITY_TIMEOUT_MS: the overall deadline plus the product's margins, and some. */
  sendTimeoutMs: number;
  /** SEND_RETRY_INITIAL_MS = SEND_RETRY_MAX_MS: a not-sent attempt waits this long before the next claim. */
  retryMs: number;
  /** MAIL_VERIFY_SETTLE_DELAY_MS, unless --settle-delay says otherwise. */
  settleDelayMs: number;
}

/** How long a slow answer holds its slot, as a share of the switch period (dev/demo/upgrade/queue_model.py). */
export const UPGRADE_SLOW_SHARE_OF_PERIOD = 0.8;

export function upgradeTimes(everyMs: number): UpgradeTimes {
  const slowMs = Math.round(everyMs * UPGRADE_SLOW_SHARE_OF_PERIOD);
  const headersTimeoutMs = slowMs + 5_000;
  const overallTimeoutMs = headersTimeoutMs + 1_000;
  return {
    slowMs,
    hangMs: overallTimeoutMs + 15_000,
    headersTimeoutMs,
    overallTimeoutMs,
    sendTimeoutMs: overallTimeoutMs + 10_000,
    retryMs: everyMs,
    settleDelayMs: everyMs,
  };
}

/** The worker environment's changes for the shaped load (on top of workerEnvironment's). */
export function upgradeWorkerEnv(times: UpgradeTimes): Record<string, string> {
  return {
    MAIL_HEADERS_TIMEOUT_MS: String(times.headersTimeoutMs),
    MAIL_OVERALL_TIMEOUT_MS: String(times.overallTimeoutMs),
    SEND_ACTIVITY_TIMEOUT_MS: String(times.sendTimeoutMs),
    WORKER_SHUTDOWN_GRACE_MS: String(times.sendTimeoutMs),
    SEND_RETRY_INITIAL_MS: String(times.retryMs),
    SEND_RETRY_MAX_MS: String(times.retryMs),
  };
}

/**
 * --upgrade-at's defaults: the shaped fault mix, slots, settle delay and start rates, unless a flag of the command line says
 * or --upgrade-plain-load leaves the profile's own.
 */
export function applyUpgradeDefaults(options: RunOptions, argv: string[], minPerState: number | null): void {
  const upgrade = options.upgrade!;
  upgrade.minPerState = minPerState ?? defaultMinPerState(options.orders, upgrade.shapedLoad);
  if (!upgrade.shapedLoad) return;
  const asked = (flag: string) => argv.includes(flag);
  const faultFlags: [string, keyof FaultMix][] = [
    ['--accept-then-drop', 'acceptThenDrop'],
    ['--hang', 'hang'],
    ['--5xx', 'serverError'],
    ['--429', 'tooManyRequests'],
    ['--503', 'unavailable'],
    ['--drop', 'dropWithoutProcessing'],
    ['--slow', 'slow'],
  ];
  const noFaults = asked('--no-faults');
  for (const [flag, key] of faultFlags) {
    if (!asked(flag) && !noFaults) options.faults[key] = UPGRADE_FAULTS[key];
  }
  if (!asked('--worker-concurrency')) options.workerConcurrency = UPGRADE_WORKER_CONCURRENCY;
  // Several clients walking every order each in its own order start most orders early (the distinct starts
  // fall off as each client meets orders already started), which left N+1 few runs: one client, paced by phase.
  if (!asked('--start-rate')) {
    options.startSteps = upgradeStartSteps(options.orders, upgrade.atMs, upgrade.everyMs);
    options.startRate = options.startSteps[0]!.rate;
    if (!asked('--clients')) options.clients = 1;
  }
  if (!asked('--settle-delay'))
    options.verification.settleDelayMs = upgradeTimes(upgrade.everyMs).settleDelayMs;
}
