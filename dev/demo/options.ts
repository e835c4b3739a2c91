// The runner's command line: a profile (profiles.ts) and the flags that change it, into RunOptions
// (runOptions.ts), refusing what does not go together.
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import {
  CLUSTER_DEFAULTS,
  FAILOVER_DEFAULTS,
  NO_FAULTS,
  OPERATOR_DEFAULTS,
  PROFILES,
  PROVIDER_CHANGE_DEFAULTS,
} from './profiles';
import { MAIL_TRANSPORTS, type FaultMix, type MailTransportName, type RunOptions } from './runOptions';
import { applyVerificationFlag } from './verificationOptions';
import { applySendOutageDefaults } from './sendOutage';
import { applyUpgradeDefaults, UPGRADE_RAMP_PERCENTAGE } from './upgradeLoad';

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
  let holdForMs: number | null = null;
  let upgradeEveryMs: number | null = null;
  let upgradeMinPerState: number | null = null;
  let upgradePlainLoad = false;
  let drainAtMs: number | null = null;
  let rotateKeyAtMs: number | null = null;

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
      case '--provider-change':
        options.failover = { ...FAILOVER_DEFAULTS.failover };
        options.providerChange = { ...PROVIDER_CHANGE_DEFAULTS.providerChange };
        given.add('--failover');
        break;
      case '--drain-at':
        drainAtMs = seconds(flag, value());
        break;
      case '--rotate-key-at':
        rotateKeyAtMs = seconds(flag, value());
        break;
      case '--hold-at':
        options.sendHold = { atMs: seconds(flag, value()), forMs: options.sendHold?.forMs ?? 120_000 };
        break;
      case '--hold-for':
        holdForMs = seconds(flag, value());
        break;
      case '--upgrade-at':
        options.upgrade = {
          atMs: seconds(flag, value()),
          everyMs: 30_000,
          rampPercentage: UPGRADE_RAMP_PERCENTAGE,
          deploymentName: 'order-mail-chaos',
          shapedLoad: true,
          minPerState: 0,
        };
        break;
      case '--upgrade-plain-load':
        upgradePlainLoad = true;
        break;
      case '--upgrade-every':
        upgradeEveryMs = seconds(flag, value());
        if (upgradeEveryMs <= 0) throw new UsageError(`${flag} must be more than 0 seconds`);
        break;
      case '--upgrade-min-per-state':
        upgradeMinPerState = nonNegativeInteger(flag, value());
        break;
      case '--outage-at':
        outageAtMs = seconds(flag, value());
        break;
      case '--outage-for':
        outageForMs = seconds(flag, value());
        if (outageForMs < 3_000) throw new UsageError(`${flag} must be at least 3 seconds (three phases)`);
        break;
      case '--send-outage': {
        const forMs = seconds(flag, value());
        if (forMs <= 0) throw new UsageError(`${flag} must be more than 0 seconds`);
        options.sendOutage = { forMs };
        break;
      }
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
  if (options.providerChange != null) {
    applyProviderChangeDefaults(options, argv, { drainAtMs, rotateKeyAtMs, outageAtMs, outageForMs });
  } else if (drainAtMs !== null || rotateKeyAtMs !== null) {
    throw new UsageError('--drain-at and --rotate-key-at need --provider-change');
  }
  if (options.sendHold !== null) {
    if (holdForMs !== null) options.sendHold.forMs = holdForMs;
    if (options.transport !== 'http') throw new UsageError('--hold-at counts requests at the HTTP sandbox');
    if (options.failover !== null)
      throw new UsageError('--hold-at does not go with --failover (two sandboxes)');
  } else if (holdForMs !== null) {
    throw new UsageError('--hold-for needs --hold-at');
  }
  if (options.upgrade !== null) {
    if (upgradeEveryMs !== null) options.upgrade.everyMs = upgradeEveryMs;
    if (upgradePlainLoad) options.upgrade.shapedLoad = false;
    if (options.cluster !== null) throw new UsageError('--upgrade-at does not go with --cluster');
    if (options.transport !== 'http')
      throw new UsageError('--upgrade-at shapes its load at the HTTP sandbox');
    applyUpgradeDefaults(options, argv, upgradeMinPerState);
  } else if (upgradeEveryMs !== null || upgradeMinPerState !== null || upgradePlainLoad) {
    throw new UsageError(
      '--upgrade-every, --upgrade-min-per-state and --upgrade-plain-load need --upgrade-at',
    );
  }
  if (options.sendOutage !== null)
    applySendOutageDefaults(options, argv, (message) => new UsageError(message));
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

/**
 * --provider-change: the failover pair (applyFailoverDefaults) without its primary outage, under the usual
 * faults unless a fault flag says otherwise, orders started slowly, the drain before the rotation.
 */
function applyProviderChangeDefaults(
  options: RunOptions,
  argv: string[],
  flags: {
    drainAtMs: number | null;
    rotateKeyAtMs: number | null;
    outageAtMs: number | null;
    outageForMs: number | null;
  },
): void {
  const change = options.providerChange!;
  if (flags.outageAtMs !== null || flags.outageForMs !== null) {
    throw new UsageError('--provider-change has no primary outage: not with --outage-at or --outage-for');
  }
  options.failover!.outageForMs = 0;
  const asked = (flag: string) => argv.includes(flag);
  const defaults = PROVIDER_CHANGE_DEFAULTS.faults;
  if (!asked('--accept-then-drop')) options.faults.acceptThenDrop = defaults.acceptThenDrop;
  if (!asked('--5xx')) options.faults.serverError = defaults.serverError;
  if (!asked('--503')) options.faults.unavailable = defaults.unavailable;
  if (!asked('--drop')) options.faults.dropWithoutProcessing = defaults.dropWithoutProcessing;
  if (!asked('--start-rate')) options.startRate = PROVIDER_CHANGE_DEFAULTS.startRate;
  if (flags.drainAtMs !== null) change.drainAtMs = flags.drainAtMs;
  if (flags.rotateKeyAtMs !== null) change.rotateKeyAtMs = flags.rotateKeyAtMs;
  if (change.rotateKeyAtMs <= change.drainAtMs) {
    throw new UsageError('--rotate-key-at must come after --drain-at (one provider change at a time)');
  }
}

function positiveInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) throw new UsageError(`${flag} must be a positive integer`);
  return value;
}

function nonNegativeInteger(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new UsageError(`${flag} must be an integer >= 0`);
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
