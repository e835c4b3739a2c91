// The report as JSON: what `--json` prints, and the files a run leaves in its folder: report.json; in a
// --cluster run cluster-acts.json (every act on the cluster with its moment, hosts and length); in a run with
// operators operator-acts.json (every act with its moment, target and outcome: what the report's operator
// counts come from) and, when an invariant failed, violations.json (the whole story of its first orders).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { OperatorActRecord, RunFacts } from './facts';
import type { RunReport } from './report';

/** The report as JSON, as `--json` prints it and report.json holds it. */
export function reportJson(report: RunReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

export async function writeReportFiles(input: {
  runDirectory: string;
  report: RunReport;
  facts: RunFacts;
  /** The operators' log, in a run with operators; null otherwise. */
  operatorActs: OperatorActRecord[] | null;
}): Promise<void> {
  const { runDirectory, report } = input;
  const write = (name: string, value: unknown) =>
    writeFile(path.join(runDirectory, name), `${JSON.stringify(value, null, 2)}\n`);
  await writeFile(path.join(runDirectory, 'report.json'), reportJson(report));
  if (report.cluster !== null) await write('cluster-acts.json', report.cluster.acts.acts);
  if (input.operatorActs !== null) {
    await write('operator-acts.json', input.operatorActs);
    if (!report.ok) await write('violations.json', violationStories(report, input.facts));
  }
}

/** For each failed invariant, everything about its example orders: to read why, in the run's violations.json. */
function violationStories(report: RunReport, facts: RunFacts): Record<string, unknown[]> {
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
