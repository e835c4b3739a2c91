// What the run's violations.json holds: for each failed invariant, its example orders with every fact about
// them (row, attempts, messages, requests, and an operator's runs and acts), to read why it failed.
import type { RunFacts, RunReport } from './report';

/** For each failed invariant, everything about its example orders: to read why, in the run's violations.json. */
export function violationStories(report: RunReport, facts: RunFacts): Record<string, unknown[]> {
  const stories: Record<string, unknown[]> = {};
  for (const invariant of report.invariants.filter((result) => !result.holds)) {
    stories[invariant.name] = invariant.violations.map((orderId) => ({
      orderId,
      row: facts.rows.find((row) => row.orderId === orderId) ?? null,
      attempts: facts.attempts.filter((attempt) => attempt.orderId === orderId),
      messages: facts.messages.filter((message) => message.orderId === orderId).map((message) => message.id),
      requests: facts.requests
        .filter((request) => request.orderId === orderId)
        .map((request) => request.fault),
      runs: facts.operators?.runs[orderId] ?? [],
      acts: (facts.operators?.acts ?? []).filter((act) => act.orderId === orderId),
    }));
  }
  return stories;
}
