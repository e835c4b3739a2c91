// What judging one invariant gives: whether it holds, and the orders that break it. A leaf, so the invariants of
// invariants.ts and scenarioInvariants.ts, and the report that lists them (report.ts), share it.

export interface InvariantResult {
  name: string;
  description: string;
  holds: boolean;
  /** Orders that break it (the first few). */
  violations: string[];
  violationCount: number;
  /**
   * In a run with operators, when it fails: the acts an operator had done on the orders that break it, by act
   * (orders per act), to say what each failure followed.
   */
  actsBehind?: Record<string, number>;
}

/** How many breaking orders (or findings) an invariant names; the count says how many there were. */
export const EXAMPLES = 10;

/** The result of an invariant broken by `broken` (order ids, or findings in words): it holds when none. */
export function judged(
  name: string,
  description: string,
  broken: string[],
  actsBehind?: (broken: string[]) => Record<string, number>,
): InvariantResult {
  return {
    name,
    description,
    holds: broken.length === 0,
    violations: broken.slice(0, EXAMPLES),
    violationCount: broken.length,
    ...(actsBehind !== undefined && broken.length > 0 ? { actsBehind: actsBehind(broken) } : {}),
  };
}
