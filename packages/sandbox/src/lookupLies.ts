// The sandbox's lookups can lie (issue 22), so a run can show that the product believes a provider only when it
// answers our question. A lie is drawn per lookup request from a seeded plan, like a fault, and counted by kind;
// each lookup record names the lie it told, so a report can say how the order it was about was settled.
//
// Lookup lies only; the webhook lies (forged, replayed, stale, …) live with the webhook sandbox
// (webhooks.ts). A plan of both is two plans, set apart.
import { InvalidFaultError, seededRandom } from './faults';

export const LOOKUP_LIE_KINDS = [
  /** Honest content, one entry per page: a client that reads only page one misses the rest. */
  'paginate',
  /** The filter (order id, send key, message id) is ignored: every indexed message comes back. */
  'ignore-filter',
  /** Messages of other orders are mixed into the answer. */
  'other-orders',
  /** A message of the same order from another deployment (another send key) is mixed in. */
  'other-deployment',
  /** The index is behind by the plan's lagMs: messages accepted within it do not show yet. */
  'lag',
  /** The lookup answers 503. */
  'fail',
  /** The answer is an empty list, as if for a domain or stream that holds none of our messages. */
  'wrong-domain',
] as const;
export type LookupLieKind = (typeof LOOKUP_LIE_KINDS)[number];

export interface LookupLiePlan {
  rates: { kind: LookupLieKind; probability: number }[];
  /**
   * How far behind a 'lag' lie's index is (longer than the settle delay to matter), and how long a 'lag' or
   * 'wrong-domain' lie holds for every lookup once told.
   */
  lagMs: number;
  seed?: number;
}

/** What a lie does to one search: read by lookups.ts and the provider emulations. */
export interface LieEffect {
  kind: LookupLieKind;
  /** Entries per page the provider hands out ('paginate'). */
  pageSize?: number;
  /** Search every indexed message, whatever the query asks ('ignore-filter'). */
  ignoreFilter?: boolean;
  /** Extra messages the index pretends to be behind by ('lag'). */
  extraLagMs?: number;
  /** Answer this status instead ('fail'). */
  status?: number;
  /** Search an empty index ('wrong-domain'). */
  emptyIndex?: boolean;
  /** Mix in messages of other orders ('other-orders') or a fabricated other deployment's ('other-deployment'). */
  mixIn?: 'other-orders' | 'other-deployment';
}

export class LookupLies {
  private plan: LookupLiePlan | null = null;
  private random: () => number;
  private counts = new Map<LookupLieKind, number>();
  /**
   * A lie about the provider's state rather than about one answer ('lag', 'wrong-domain') holds for every
   * lookup for a while (lagMs), as a provider's log that is behind, or a proxy answering from another
   * domain's index, is behind or wrong for everyone asking then, not for one request in isolation.
   */
  private window: { effect: LieEffect; untilMs: number } | null = null;

  constructor(private readonly seed: number) {
    this.random = seededRandom(seed);
  }

  /** A new plan starts a new count. */
  setPlan(input: unknown): void {
    this.plan = parseLookupLiePlan(input);
    this.window = null;
    this.counts.clear();
    this.random = seededRandom(this.plan.seed ?? this.seed);
  }

  reset(): void {
    this.plan = null;
    this.window = null;
    this.counts.clear();
    this.random = seededRandom(this.seed);
  }

  /** How many lookups told each kind of lie since the plan was set. */
  told(): Record<LookupLieKind, number> {
    return Object.fromEntries(LOOKUP_LIE_KINDS.map((kind) => [kind, this.counts.get(kind) ?? 0])) as Record<
      LookupLieKind,
      number
    >;
  }

  /**
   * The lie this lookup tells, or null. `canPage` says whether the provider's answer has pages (a paginate lie
   * is only told where a client could follow them).
   */
  draw(options: { canPage: boolean; nowMs: number }): LieEffect | null {
    if (this.plan === null) return null;
    if (this.window !== null && options.nowMs < this.window.untilMs) {
      this.count(this.window.effect.kind);
      return this.window.effect;
    }
    this.window = null;
    const draw = this.random();
    let upTo = 0;
    for (const rate of this.plan.rates) {
      upTo += rate.probability;
      if (draw >= upTo) continue;
      if (rate.kind === 'paginate' && !options.canPage) return null;
      this.count(rate.kind);
      const effect = effectOf(rate.kind, this.plan.lagMs);
      if (rate.kind === 'lag' || rate.kind === 'wrong-domain') {
        this.window = { effect, untilMs: options.nowMs + this.plan.lagMs };
      }
      return effect;
    }
    return null;
  }

  private count(kind: LookupLieKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }
}

function effectOf(kind: LookupLieKind, lagMs: number): LieEffect {
  switch (kind) {
    case 'paginate':
      return { kind, pageSize: 1 };
    case 'ignore-filter':
      return { kind, ignoreFilter: true };
    case 'other-orders':
      return { kind, mixIn: 'other-orders' };
    case 'other-deployment':
      return { kind, mixIn: 'other-deployment' };
    case 'lag':
      return { kind, extraLagMs: lagMs };
    case 'fail':
      return { kind, status: 503 };
    case 'wrong-domain':
      return { kind, emptyIndex: true };
  }
}

export function parseLookupLiePlan(input: unknown): LookupLiePlan {
  if (typeof input !== 'object' || input === null)
    throw new InvalidFaultError('A lie plan must be an object.');
  const plan = input as { rates?: unknown; lagMs?: unknown; seed?: unknown };
  if (!Array.isArray(plan.rates)) throw new InvalidFaultError('A lie plan needs a rates array.');
  const rates = plan.rates.map((rate: unknown) => {
    const { kind, probability } = (rate ?? {}) as { kind?: unknown; probability?: unknown };
    if (!LOOKUP_LIE_KINDS.includes(kind as LookupLieKind)) {
      throw new InvalidFaultError(`Unknown lookup lie ${JSON.stringify(String(kind)).slice(0, 40)}.`);
    }
    if (typeof probability !== 'number' || !(probability >= 0 && probability <= 1)) {
      throw new InvalidFaultError('Each lie rate needs a probability from 0 to 1.');
    }
    return { kind: kind as LookupLieKind, probability };
  });
  if (rates.reduce((sum, rate) => sum + rate.probability, 0) > 1 + 1e-9) {
    throw new InvalidFaultError('The lie probabilities add up to more than 1.');
  }
  const lagMs = plan.lagMs ?? 0;
  if (!Number.isInteger(lagMs) || (lagMs as number) < 0) {
    throw new InvalidFaultError('lagMs must be an integer >= 0.');
  }
  if (plan.seed !== undefined && !Number.isInteger(plan.seed)) {
    throw new InvalidFaultError('seed must be an integer.');
  }
  return {
    rates,
    lagMs: lagMs as number,
    ...(plan.seed === undefined ? {} : { seed: plan.seed as number }),
  };
}
