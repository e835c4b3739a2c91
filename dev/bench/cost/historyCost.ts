// What one workflow run costs, counted from its recorded history (the JSON that `temporal workflow show
// --output json` writes and the replay fixtures hold): its history events, and the Temporal Cloud billable
// Actions by the rules of docs.temporal.io/cloud/actions (read 2026-12-01; docs/benchmarks.md says them in
// our words). Pure: no I/O, no clock. The bench prints it per path; test/cost pins the accepted path with it.
//
// What a history cannot show is not counted, and the bench says so: queries, activity heartbeats, and a
// Schedule's own two Actions per run (the reconciliation sweep's schedule), which are not in a history.

/** Why an Action was counted; each key is one rule of the pricing page. */
export type ActionRule =
  /** A run started: client start, Continue-As-New's new run, a child's start (WorkflowExecutionStarted). */
  | 'workflowStarted'
  /** Each ActivityTaskScheduled. */
  | 'activityScheduled'
  /** Each attempt after the first of a regular activity (ActivityTaskStarted.attempt − 1). */
  | 'activityRetried'
  /** Every marker (local activity, patch, side effect) recorded by one workflow task: one Action together. */
  | 'markersOfOneWorkflowTask'
  /** Local-activity attempts after the first, as the server metered them on the workflow task. */
  | 'localActivityRetried'
  /** A workflow task completed only to keep a long local activity alive (forced new task, no commands). */
  | 'workflowTaskHeartbeat'
  | 'timerStarted'
  | 'signalReceived'
  /** One UpsertWorkflowSearchAttributes command, however many attributes it sets. */
  | 'searchAttributesUpserted'
  /** Intent to start a child, and the attempt: two Actions. */
  | 'childWorkflowStarted'
  | 'updateAccepted'
  | 'workflowOptionsUpdated'
  | 'nexusOperation'
  /** The reset itself (the WorkflowTaskFailed with cause RESET_WORKFLOW at the reset point). */
  | 'workflowReset';

/** Things in the history that look billable and are not, by the same page. */
export type NotBilledRule =
  /** The patch API's own upsert of TemporalChangeVersion: exempt. */
  | 'temporalChangeVersionUpsert'
  /** Events a reset copied from the run it reset: they were counted on that run. */
  | 'copiedBeforeReset'
  /** Search attributes given in the start request: part of the start, no Action of their own. */
  | 'searchAttributesAtStart'
  /** The signal of a Signal-With-Start: one Action for both, counted as the start. */
  | 'signalOfSignalWithStart';

export interface HistoryCost {
  events: number;
  actions: number;
  /** Actions by rule; rules that did not apply are absent. */
  actionsByRule: Partial<Record<ActionRule, number>>;
  notBilled: Partial<Record<NotBilledRule, number>>;
}

type EventJson = Record<string, unknown>;

const TEMPORAL_CHANGE_VERSION = 'TemporalChangeVersion';
const RESET_CAUSE = 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW';

export class HistoryFormatError extends Error {
  override readonly name = 'HistoryFormatError';
  readonly code = 'ERR_HISTORY_FORMAT';
}

/** Counts the events and billable Actions of one run's history. Throws HistoryFormatError on anything else. */
export function countHistoryCost(input: unknown): HistoryCost {
  const events = eventsOf(input);
  const cost: HistoryCost = { events: events.length, actions: 0, actionsByRule: {}, notBilled: {} };
  const bill = (rule: ActionRule, count = 1): void => {
    if (count <= 0) return;
    cost.actions += count;
    cost.actionsByRule[rule] = (cost.actionsByRule[rule] ?? 0) + count;
  };
  const skip = (rule: NotBilledRule, count = 1): void => {
    if (count <= 0) return;
    cost.notBilled[rule] = (cost.notBilled[rule] ?? 0) + count;
  };

  // A reset run begins with a copy of the reset run's events up to the reset point; the last reset marks
  // where this run's own events begin (a reset of a reset copies the earlier reset too).
  const types = events.map(eventTypeOf);
  let lastReset = -1;
  types.forEach((type, index) => {
    if (type === 'WORKFLOW_TASK_FAILED' && attributesOf(events[index]!, type).cause === RESET_CAUSE) {
      lastReset = index;
    }
  });
  skip('copiedBeforeReset', Math.max(0, lastReset));

  const markerTasks = new Set<string>();
  for (let index = Math.max(0, lastReset); index < events.length; index++) {
    const event = events[index]!;
    const type = types[index]!;
    const attributes = attributesOf(event, type);
    switch (type) {
      case 'WORKFLOW_EXECUTION_STARTED': {
        bill('workflowStarted');
        const given = Object.keys(record(record(attributes.searchAttributes).indexedFields));
        skip('searchAttributesAtStart', given.length > 0 ? 1 : 0);
        break;
      }
      case 'WORKFLOW_EXECUTION_SIGNALED':
        // A Signal-With-Start that started the run writes its signal right after the start: one Action.
        if (index === 1 && types[0] === 'WORKFLOW_EXECUTION_STARTED') skip('signalOfSignalWithStart');
        else bill('signalReceived');
        break;
      case 'ACTIVITY_TASK_SCHEDULED':
        bill('activityScheduled');
        break;
      case 'ACTIVITY_TASK_STARTED':
        bill('activityRetried', Number(attributes.attempt ?? 1) - 1);
        break;
      case 'MARKER_RECORDED':
        // The event id of the workflow task completion that recorded it (a string or number in the JSON).
        markerTasks.add(idText(attributes.workflowTaskCompletedEventId) ?? `event ${index}`);
        break;
      case 'WORKFLOW_TASK_COMPLETED': {
        const metering = record(attributes.meteringMetadata);
        bill('localActivityRetried', Number(metering.nonfirstLocalActivityExecutionAttempts ?? 0));
        // A task that completes with no command and is followed at once by a new task was forced by the SDK
        // to keep a local activity running past the task timeout: a workflow task heartbeat.
        if (types[index + 1] === 'WORKFLOW_TASK_SCHEDULED') bill('workflowTaskHeartbeat');
        break;
      }
      case 'TIMER_STARTED':
        bill('timerStarted');
        break;
      case 'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES': {
        const names = Object.keys(record(record(attributes.searchAttributes).indexedFields));
        if (names.length > 0 && names.every((name) => name === TEMPORAL_CHANGE_VERSION)) {
          skip('temporalChangeVersionUpsert');
        } else {
          bill('searchAttributesUpserted');
        }
        break;
      }
      case 'START_CHILD_WORKFLOW_EXECUTION_INITIATED':
        bill('childWorkflowStarted', 2);
        break;
      case 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED':
        bill('updateAccepted');
        break;
      case 'WORKFLOW_EXECUTION_OPTIONS_UPDATED':
        bill('workflowOptionsUpdated');
        break;
      case 'NEXUS_OPERATION_SCHEDULED':
      case 'NEXUS_OPERATION_CANCEL_REQUESTED':
        bill('nexusOperation');
        break;
      case 'WORKFLOW_TASK_FAILED':
        if (index === lastReset) bill('workflowReset');
        break;
      default:
        // Workflow tasks, completions, activity results, timers firing, continue-as-new (billed as the new
        // run's start), signals sent to another workflow (billed in the receiver's history): no Action here.
        break;
    }
  }
  bill('markersOfOneWorkflowTask', markerTasks.size);
  return cost;
}

function eventsOf(input: unknown): EventJson[] {
  const outer = record(input);
  const inner = 'history' in outer ? record(outer.history) : outer;
  const events = inner.events;
  if (!Array.isArray(events) || events.length === 0) {
    throw new HistoryFormatError(
      'not a workflow history: expected { events: [...] } with at least one event',
    );
  }
  events.forEach((event, index) => {
    if (typeof record(event).eventType !== 'string') {
      throw new HistoryFormatError(`history event ${index + 1} has no eventType`);
    }
  });
  return events as EventJson[];
}

/**
 * 'EVENT_TYPE_MARKER_RECORDED' (the API's JSON), 'MarkerRecorded' (older CLIs) → 'MARKER_RECORDED'.
 * Exported for the tests.
 */
export function eventTypeOf(event: EventJson): string {
  const raw = String(event.eventType);
  const screaming =
    raw.includes('_') || raw === raw.toUpperCase() ? raw : raw.replace(/(?<!^)([A-Z])/g, '_$1');
  return screaming.toUpperCase().replace(/^EVENT_TYPE_/, '');
}

/** The event's `<camelCaseType>EventAttributes` object, or {} when it has none. */
function attributesOf(event: EventJson, type: string): Record<string, unknown> {
  const camel = type.toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
  return record(event[`${camel}EventAttributes`]);
}

function idText(value: unknown): string | null {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : null;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}
