// Breadth-first search over every interleaving of the model's moves, with a visited set: the first
// counterexample found is a shortest one.
import {
  DEFAULT_BOUNDS,
  PROVIDERS,
  initialState,
  quiescentBroken,
  successors,
  type Bounds,
  type Config,
  type Mutations,
  type ProviderProfile,
  type State,
} from './model';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';

export interface Counterexample {
  property: 'safety' | 'liveness';
  why: string;
  /** The moves from the initial state, as `actor: action [transition]`. */
  trace: string[];
}

export interface Result {
  config: { provider: string; policy: UnknownOutcomePolicy; mutations: Mutations; bounds: Bounds };
  states: number;
  ms: number;
  safety: Counterexample | null;
  /** The shortest liveness counterexample of each kind: its reason, and whether the case study's writer held the row. */
  liveness: Counterexample[];
  /** Every transition of the table some explored move ran: a model that never reaches one checks nothing of it. */
  transitions: string[];
}

/** A trace where the case study's writer claimed the row: the sweep settles its quiet row by the policy. */
export const CASE_STUDY_CLAIMED = 'case study: claims';

export function explore(input: {
  provider: ProviderProfile;
  policy: UnknownOutcomePolicy;
  bounds?: Bounds;
  mutations?: Mutations;
}): Result {
  const config: Config = {
    provider: input.provider,
    policy: input.policy,
    bounds: input.bounds ?? DEFAULT_BOUNDS,
    mutations: input.mutations ?? {},
  };
  const started = performance.now();
  const start = initialState();
  const parent = new Map<string, { from: string | null; move: string }>();
  const startKey = JSON.stringify(start);
  parent.set(startKey, { from: null, move: '' });
  let frontier: [string, State][] = [[startKey, start]];
  let safety: Counterexample | null = null;
  const liveness = new Map<string, Counterexample>();
  const transitions = new Set<string>();
  const traceOf = (key: string): string[] => {
    const moves: string[] = [];
    for (let k: string | null = key; k !== null;) {
      const p = parent.get(k);
      if (p === undefined || p.from === null) break;
      moves.push(p.move);
      k = p.from;
    }
    return moves.reverse();
  };
  while (frontier.length > 0 && safety === null) {
    const next: [string, State][] = [];
    for (const [key, state] of frontier) {
      const steps = successors(state, config);
      if (steps.length === 0) {
        const why = quiescentBroken(state);
        if (why !== null) {
          const trace = traceOf(key);
          const kind = `${why}|${trace.some((m) => m.startsWith(CASE_STUDY_CLAIMED))}`;
          if (!liveness.has(kind)) liveness.set(kind, { property: 'liveness', why, trace });
        }
      }
      for (const step of steps) {
        if (step.transition !== undefined) transitions.add(step.transition);
        const k = JSON.stringify(step.next);
        if (parent.has(k)) continue;
        const move = `${step.actor}: ${step.action}${step.transition ? ` [${step.transition}]` : ''}`;
        parent.set(k, { from: key, move });
        if (step.next.violation !== null) {
          safety = { property: 'safety', why: step.next.violation, trace: traceOf(k) };
          break;
        }
        next.push([k, step.next]);
      }
      if (safety !== null) break;
    }
    frontier = next;
  }
  return {
    config: {
      provider: input.provider.name,
      policy: input.policy,
      mutations: config.mutations,
      bounds: config.bounds,
    },
    states: parent.size,
    ms: Math.round(performance.now() - started),
    safety,
    liveness: [...liveness.values()],
    transitions: [...transitions].sort(),
  };
}

export function providerNamed(name: string): ProviderProfile {
  const found = PROVIDERS.find((p) => p.name === name);
  if (found === undefined) throw new Error(`no provider ${name} in the model`);
  return found;
}

export function printCounterexample(c: Counterexample): string {
  return [
    `  ${c.property} broken: ${c.why}`,
    ...c.trace.map((m, i) => `    ${String(i + 1).padStart(2)}. ${m}`),
  ].join('\n');
}
