// Faults the sandbox can inject, and how it picks one for a request: first a fault queued for that order,
// else a draw from the rate plan. The draw comes from a seeded generator so a run can be repeated.

/** Read the whole body, record the message as accepted, then close the socket without answering. */
export interface AcceptThenDropFault {
  kind: 'accept-then-drop';
}
/** Record the message, then answer 202 only after `ms` (or at release/close; never by itself without `ms`). */
export interface AcceptThenHangFault {
  kind: 'accept-then-hang';
  ms?: number;
}
/** Close the socket without recording anything: the provider crashed before processing. */
export interface DropWithoutProcessingFault {
  kind: 'drop-without-processing';
}
/** Answer `status`; record the message as accepted only when `record` is true ("500 after processing"). */
export interface StatusFault {
  kind: 'status';
  status: number;
  retryAfterSeconds?: number;
  record?: boolean;
  /** The provider's error name or code to put in the error body (Resend `name`, Postmark `ErrorCode`). */
  providerError?: string;
}

export type Fault = AcceptThenDropFault | AcceptThenHangFault | DropWithoutProcessingFault | StatusFault;

export interface FaultRate {
  fault: Fault;
  /** 0..1; the rates of one plan add up to at most 1, and the rest of the requests get no fault. */
  probability: number;
}

export interface FaultPlan {
  rates: FaultRate[];
  /** Overrides the sandbox's seed for this plan. */
  seed?: number;
}

export class InvalidFaultError extends Error {
  override readonly name = 'InvalidFaultError';
  readonly code = 'ERR_SANDBOX_INVALID_FAULT';
}

/** Validates a fault that arrived as JSON (control API, environment). Throws InvalidFaultError. */
export function parseFault(input: unknown): Fault {
  if (typeof input !== 'object' || input === null) throw new InvalidFaultError('A fault must be an object.');
  const fault = input as Record<string, unknown>;
  switch (fault.kind) {
    case 'accept-then-drop':
    case 'drop-without-processing':
      return { kind: fault.kind };
    case 'accept-then-hang':
      if (fault.ms === undefined) return { kind: 'accept-then-hang' };
      if (!isNonNegativeInteger(fault.ms)) {
        throw new InvalidFaultError('accept-then-hang: ms must be an integer >= 0.');
      }
      return { kind: 'accept-then-hang', ms: fault.ms };
    case 'status': {
      // 1xx would be an interim answer, not a fault the client could classify.
      if (
        !Number.isInteger(fault.status) ||
        (fault.status as number) < 200 ||
        (fault.status as number) > 599
      ) {
        throw new InvalidFaultError('status: status must be an integer from 200 to 599.');
      }
      const parsed: StatusFault = { kind: 'status', status: fault.status as number };
      if (fault.retryAfterSeconds !== undefined) {
        if (!isNonNegativeInteger(fault.retryAfterSeconds)) {
          throw new InvalidFaultError('status: retryAfterSeconds must be an integer >= 0.');
        }
        parsed.retryAfterSeconds = fault.retryAfterSeconds;
      }
      if (fault.record !== undefined) {
        if (typeof fault.record !== 'boolean') {
          throw new InvalidFaultError('status: record must be a boolean.');
        }
        parsed.record = fault.record;
      }
      if (fault.providerError !== undefined) {
        if (typeof fault.providerError !== 'string' || !/^[A-Za-z0-9_]{1,64}$/.test(fault.providerError)) {
          throw new InvalidFaultError('status: providerError must be 1-64 letters, digits or underscores.');
        }
        parsed.providerError = fault.providerError;
      }
      return parsed;
    }
    default:
      throw new InvalidFaultError(`Unknown fault kind ${JSON.stringify(String(fault.kind)).slice(0, 60)}.`);
  }
}

/** Validates a fault plan that arrived as JSON. Throws InvalidFaultError. */
export function parseFaultPlan(input: unknown): FaultPlan {
  if (typeof input !== 'object' || input === null || !Array.isArray((input as { rates?: unknown }).rates)) {
    throw new InvalidFaultError('A fault plan must be an object with a rates array.');
  }
  const { rates, seed } = input as { rates: unknown[]; seed?: unknown };
  const plan: FaultPlan = {
    rates: rates.map((rate) => {
      const { fault, probability } = (rate ?? {}) as { fault?: unknown; probability?: unknown };
      if (typeof probability !== 'number' || !(probability >= 0 && probability <= 1)) {
        throw new InvalidFaultError('Each rate needs a probability from 0 to 1.');
      }
      return { fault: parseFault(fault), probability };
    }),
  };
  // A little slack for decimal fractions such as 0.1 + 0.2.
  if (plan.rates.reduce((sum, rate) => sum + rate.probability, 0) > 1 + 1e-9) {
    throw new InvalidFaultError('The probabilities of a fault plan add up to more than 1.');
  }
  if (seed !== undefined) {
    if (!Number.isInteger(seed)) throw new InvalidFaultError('A fault plan seed must be an integer.');
    plan.seed = seed as number;
  }
  return plan;
}

/** Picks the fault for each request. Not thread-safe, and needs not be: one per sandbox, on one event loop. */
export class FaultChooser {
  private readonly queues = new Map<string, Fault[]>();
  private plan: FaultPlan = { rates: [] };
  private random: () => number;

  constructor(private readonly defaultSeed: number) {
    this.random = seededRandom(defaultSeed);
  }

  queue(orderId: string, fault: Fault, times: number): void {
    if (!Number.isInteger(times) || times < 1) throw new InvalidFaultError('times must be an integer >= 1.');
    const queue = this.queues.get(orderId) ?? [];
    for (let i = 0; i < times; i += 1) queue.push(fault);
    this.queues.set(orderId, queue);
  }

  /** Replaces the plan and restarts the generator, so the same plan and seed give the same sequence. */
  setPlan(plan: FaultPlan): void {
    this.plan = plan;
    this.random = seededRandom(plan.seed ?? this.defaultSeed);
  }

  /** The fault for the next request of `orderId` (null when the order is unknown), or null for none. */
  next(orderId: string | null): Fault | null {
    if (orderId !== null) {
      const queued = this.queues.get(orderId)?.shift();
      if (queued !== undefined) return queued;
    }
    if (this.plan.rates.length === 0) return null;
    // One draw per request whatever the outcome, so the sequence depends only on the seed and the order of requests.
    const draw = this.random();
    let upTo = 0;
    for (const rate of this.plan.rates) {
      upTo += rate.probability;
      if (draw < upTo) return rate.fault;
    }
    return null;
  }

  reset(): void {
    this.queues.clear();
    this.setPlan({ rates: [] });
  }
}

/** mulberry32: tiny, fast and good enough to spread faults; not for anything secret. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function isNonNegativeInteger(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0;
}
