// The stored histories of test/replay/histories/ and what makes two histories the same path: the sequence of
// what the workflow issued (its commands: activities, local activities and their results' kinds, timers,
// search-attribute and memo upserts, how it ended) and the answers it got, with times, ids and payload
// details left out. Histories are read and stored in the CLI's JSON (`temporal workflow show --output json`),
// the form the SDK's replayer reads.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { findTemporalCli } from '../../dev/devtools/findTemporalCli';

export const REPLAY_HISTORIES_DIRECTORY = path.join(__dirname, 'histories');

/**
 * Every path a stored history exists for. The replay test insists on exactly these files, and
 * recordedPaths.test.ts runs each path again and compares it with its file, so a stale fixture fails.
 */
export const RECORDED_PATHS = [
  'accepted',
  'rejected-422',
  'refused-before-sending',
  'retry-after-429',
  'not-sent-gave-up',
  'unknown-assume-sent',
  'unknown-assume-failed-then-accepted',
  'unknown-idempotent-retry-then-accepted',
  'unknown-never-dispatched',
  'unknown-verified-accepted',
  'unknown-verified-not-sent-then-accepted',
  'unknown-verification-inconclusive-assume-sent',
  'reset-of-sent',
  'reset-after-rejected-then-accepted',
  // A reset while the send was dispatched and unrecorded: the new run asks the provider, then claims.
  'reset-mid-send-verified-accepted',
  'cancel-during-claim',
  'cancel-during-send',
  'cancel-during-send-then-settle-delay',
  'cancel-during-backoff',
  'cancel-during-record',
  'claim-reexecuted',
  'record-reexecuted',
  // The reconciliation sweep (reconcileOrderMails), settling the claim of a terminated run.
  'sweep-settles-terminated-run',
  // The sweep asking the provider about a terminated run's dispatched request.
  'sweep-verifies-terminated-run',
  // Started before its order was visible: the run waits on timers and claims again until the order appears.
  'order-visible-after-wait',
  // Started for an order that never appears: the run waits its (short) bound, then fails OrderNotFound.
  'order-never-visible',
  // Sent while an operator held sends: the fence refused, the run waited for the resume signal, then sent.
  'held-then-resumed',
] as const;

export type RecordedPath = (typeof RECORDED_PATHS)[number];

export interface StoredHistory {
  workflowId: string;
  history: { events: HistoryEvent[] };
}

type HistoryEvent = Record<string, unknown> & { eventType: string };

export function storedHistoryFile(name: string): string {
  return path.join(REPLAY_HISTORIES_DIRECTORY, `${name}.json`);
}

export function readStoredHistory(name: string): StoredHistory | null {
  const file = storedHistoryFile(name);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as StoredHistory) : null;
}

/**
 * The latest run's history of `workflowId`, from the run's Temporal server, in the CLI's JSON. Not blocking:
 * paths run side by side with their workers in this process.
 */
export async function fetchHistoryJson(workflowId: string): Promise<StoredHistory> {
  const cli = findTemporalCli();
  if (cli === null) throw new Error('Replay histories need the temporal CLI; run scripts/setup.sh');
  const { stdout: json } = await promisify(execFile)(
    cli,
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      '--output',
      'json',
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
    ],
    { encoding: 'utf8' },
  );
  return { workflowId, history: JSON.parse(json) as StoredHistory['history'] };
}

export function storeHistory(name: string, history: StoredHistory): void {
  mkdirSync(REPLAY_HISTORIES_DIRECTORY, { recursive: true });
  writeFileSync(storedHistoryFile(name), JSON.stringify(history, null, 2) + '\n');
}

/** What a history says the workflow did, one line per command or answer. */
export function pathShape(history: StoredHistory): string[] {
  return history.history.events.flatMap((event) => {
    const type = event.eventType.replace(/^EVENT_TYPE_/, '');
    const attributes = Object.entries(event).find(([key]) => key.endsWith('EventAttributes'))?.[1] as
      Record<string, unknown> | undefined;
    const a = attributes ?? {};
    switch (type) {
      case 'ACTIVITY_TASK_SCHEDULED':
        return [`activity ${name(a.activityType)}`];
      case 'ACTIVITY_TASK_COMPLETED':
        return ['activity completed'];
      case 'ACTIVITY_TASK_FAILED':
        return [`activity failed ${failureType(a.failure)}`];
      case 'ACTIVITY_TASK_TIMED_OUT':
        return [
          `activity timed out ${String((a.failure as { timeoutFailureInfo?: { timeoutType?: string } })?.timeoutFailureInfo?.timeoutType)}`,
        ];
      case 'ACTIVITY_TASK_CANCEL_REQUESTED':
        return ['activity cancel requested'];
      case 'MARKER_RECORDED':
        return [markerShape(a)];
      case 'TIMER_STARTED':
        return [`timer ${String(a.startToFireTimeout)}`];
      case 'TIMER_FIRED':
        return ['timer fired'];
      case 'TIMER_CANCELED':
        return ['timer cancelled'];
      case 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES':
        return [
          `search attributes ${keysOf((a.searchAttributes as { indexedFields?: object })?.indexedFields)}`,
        ];
      case 'WORKFLOW_PROPERTIES_MODIFIED':
        return [`memo ${keysOf((a.upsertedMemo as { fields?: object })?.fields)}`];
      case 'WORKFLOW_TASK_FAILED':
        return [`workflow task failed ${String(a.cause)}`];
      case 'WORKFLOW_EXECUTION_CANCEL_REQUESTED':
        return ['cancel requested'];
      case 'WORKFLOW_EXECUTION_COMPLETED':
        return ['completed'];
      case 'WORKFLOW_EXECUTION_FAILED':
        return [`failed ${failureType(a.failure)}`];
      case 'WORKFLOW_EXECUTION_CANCELED':
        return ['cancelled'];
      case 'WORKFLOW_EXECUTION_CONTINUED_AS_NEW':
        return ['continued as new'];
      default:
        // Workflow-task bookkeeping, starts, signals: not what the workflow did.
        return [];
    }
  });
}

function name(value: unknown): string {
  return String((value as { name?: unknown } | undefined)?.name);
}

function failureType(failure: unknown): string {
  // The innermost application failure's type: what the activity or the workflow failed with.
  let current = failure as { applicationFailureInfo?: { type?: string }; cause?: unknown } | undefined;
  let type = 'unknown';
  while (current) {
    if (current.applicationFailureInfo?.type) type = current.applicationFailureInfo.type;
    current = current.cause as typeof current;
  }
  return type;
}

function keysOf(fields: object | undefined): string {
  return Object.keys(fields ?? {})
    .sort()
    .join(',');
}

function markerShape(attributes: Record<string, unknown>): string {
  const markerName = String(attributes.markerName);
  const details = (attributes.details ?? {}) as Record<string, { payloads?: { data?: string }[] }>;
  const decode = (key: string): Record<string, unknown> | null => {
    const data = details[key]?.payloads?.[0]?.data;
    return data === undefined
      ? null
      : (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as Record<string, unknown>);
  };
  if (markerName !== 'core_local_activity') return `marker ${markerName}`;
  const activityType = String(decode('data')?.activity_type);
  const result = decode('result');
  // The answer's kind, and what the claim or the record did: the path's branch points.
  const said = result === null ? [] : [result.kind, result.how, result.state, result.outcome];
  const shown = said.filter((value): value is string => typeof value === 'string');
  return `local activity ${activityType}${shown.length === 0 ? '' : ` → ${shown.join(' ')}`}`;
}
