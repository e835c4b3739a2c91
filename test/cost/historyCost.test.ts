// The Actions counter against small histories written by hand, one per rule of the pricing page, in the JSON
// form `temporal workflow show --output json` writes (and in the older PascalCase form).
import { describe, expect, it } from 'vitest';
import { countHistoryCost, eventTypeOf, HistoryFormatError } from '../../dev/bench/cost/historyCost';

type Event = Record<string, unknown>;

/** A history from [type, attributes] pairs; event ids are assigned in order, as the server does. */
function history(...events: [string, Record<string, unknown>?][]): { events: Event[] } {
  return {
    events: events.map(([type, attributes], index) => {
      const camel = type.toLowerCase().replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
      return {
        eventId: String(index + 1),
        eventType: `EVENT_TYPE_${type}`,
        ...(attributes === undefined ? {} : { [`${camel}EventAttributes`]: attributes }),
      };
    }),
  };
}

const indexed = (...names: string[]) => ({
  searchAttributes: { indexedFields: Object.fromEntries(names.map((name) => [name, { data: 'e30=' }])) },
});
const task = (): [string, Record<string, unknown>?][] => [
  ['WORKFLOW_TASK_SCHEDULED', {}],
  ['WORKFLOW_TASK_STARTED', {}],
  ['WORKFLOW_TASK_COMPLETED', {}],
];
const marker = (name: string, workflowTaskCompletedEventId: string): [string, Record<string, unknown>] => [
  'MARKER_RECORDED',
  { markerName: name, workflowTaskCompletedEventId },
];

describe('countHistoryCost', () => {
  it("today's accepted order: start, one marker batch per task, two state upserts, the send; the patch's own upsert is free", () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ...task(), // 2-4
        marker('core_patch', '4'),
        ['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', indexed('TemporalChangeVersion')],
        marker('core_patch', '4'),
        marker('core_local_activity', '4'),
        ['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', indexed('OrderMailState', 'OrderMailAttempts')],
        ['ACTIVITY_TASK_SCHEDULED', {}],
        ['ACTIVITY_TASK_STARTED', { attempt: 1 }],
        ['ACTIVITY_TASK_COMPLETED', {}],
        ...task(), // 13-15
        marker('core_local_activity', '15'),
        ['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES', indexed('OrderMailState', 'OrderMailOutcome')],
        ['WORKFLOW_EXECUTION_COMPLETED', {}],
      ),
    );
    expect(cost).toEqual({
      events: 18,
      actions: 6,
      actionsByRule: {
        workflowStarted: 1,
        activityScheduled: 1,
        markersOfOneWorkflowTask: 2,
        searchAttributesUpserted: 2,
      },
      notBilled: { temporalChangeVersionUpsert: 1 },
    });
  });

  it('search attributes given at start cost nothing beyond the start', () => {
    const cost = countHistoryCost(
      history(['WORKFLOW_EXECUTION_STARTED', indexed('OrderMailState')], ...task(), [
        'WORKFLOW_EXECUTION_COMPLETED',
        {},
      ]),
    );
    expect(cost.actions).toBe(1);
    expect(cost.notBilled).toEqual({ searchAttributesAtStart: 1 });
  });

  it('an upsert that sets TemporalChangeVersion and another attribute is billed', () => {
    const cost = countHistoryCost(
      history(['WORKFLOW_EXECUTION_STARTED', {}], ...task(), [
        'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
        indexed('TemporalChangeVersion', 'OrderMailState'),
      ]),
    );
    expect(cost.actionsByRule).toEqual({ workflowStarted: 1, searchAttributesUpserted: 1 });
  });

  it('markers of three workflow tasks are three Actions, however many each task records', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ...task(), // 2-4
        marker('core_local_activity', '4'),
        marker('core_local_activity', '4'),
        marker('core_local_activity', '4'),
        ...task(), // 8-10
        marker('core_local_activity', '10'),
        ...task(), // 12-14
        marker('core_patch', '14'),
      ),
    );
    expect(cost.actionsByRule.markersOfOneWorkflowTask).toBe(3);
    expect(cost.actions).toBe(4);
  });

  it('regular activity retries: one Action per attempt after the first', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ...task(),
        ['ACTIVITY_TASK_SCHEDULED', {}],
        ['ACTIVITY_TASK_STARTED', { attempt: 4 }],
        ['ACTIVITY_TASK_COMPLETED', {}],
      ),
    );
    expect(cost.actionsByRule).toEqual({ workflowStarted: 1, activityScheduled: 1, activityRetried: 3 });
  });

  it('local activity retries as metered on the workflow task, and a workflow task heartbeat', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ['WORKFLOW_TASK_SCHEDULED', {}],
        ['WORKFLOW_TASK_STARTED', {}],
        ['WORKFLOW_TASK_COMPLETED', {}], // a heartbeat: no command, a new task at once
        ['WORKFLOW_TASK_SCHEDULED', {}],
        ['WORKFLOW_TASK_STARTED', {}],
        ['WORKFLOW_TASK_COMPLETED', { meteringMetadata: { nonfirstLocalActivityExecutionAttempts: 2 } }],
        marker('core_local_activity', '7'),
      ),
    );
    expect(cost.actionsByRule).toEqual({
      workflowStarted: 1,
      workflowTaskHeartbeat: 1,
      localActivityRetried: 2,
      markersOfOneWorkflowTask: 1,
    });
  });

  it('timers, signals, child workflows (two each), updates, options updates and Nexus operations', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ...task(),
        ['TIMER_STARTED', {}],
        ['TIMER_FIRED', {}],
        ['WORKFLOW_EXECUTION_SIGNALED', {}],
        ['START_CHILD_WORKFLOW_EXECUTION_INITIATED', {}],
        ['WORKFLOW_EXECUTION_UPDATE_ACCEPTED', {}],
        ['WORKFLOW_EXECUTION_OPTIONS_UPDATED', {}],
        ['NEXUS_OPERATION_SCHEDULED', {}],
        ['NEXUS_OPERATION_CANCEL_REQUESTED', {}],
        ['SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED', {}],
        ['WORKFLOW_EXECUTION_CONTINUED_AS_NEW', {}],
      ),
    );
    expect(cost.actionsByRule).toEqual({
      workflowStarted: 1,
      timerStarted: 1,
      signalReceived: 1,
      childWorkflowStarted: 2,
      updateAccepted: 1,
      workflowOptionsUpdated: 1,
      nexusOperation: 2,
    });
  });

  it('a Signal-With-Start that started the run is one Action', () => {
    const cost = countHistoryCost(
      history(['WORKFLOW_EXECUTION_STARTED', {}], ['WORKFLOW_EXECUTION_SIGNALED', {}], ...task()),
    );
    expect(cost.actions).toBe(1);
    expect(cost.notBilled).toEqual({ signalOfSignalWithStart: 1 });
  });

  it('a reset run: the copied events were billed on the run that was reset; the reset is one Action', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ['WORKFLOW_TASK_SCHEDULED', {}],
        ['WORKFLOW_TASK_STARTED', {}],
        ['WORKFLOW_TASK_FAILED', { cause: 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW' }],
        ...task(), // 5-7
        marker('core_local_activity', '7'),
        ['ACTIVITY_TASK_SCHEDULED', {}],
      ),
    );
    expect(cost.actionsByRule).toEqual({
      workflowReset: 1,
      markersOfOneWorkflowTask: 1,
      activityScheduled: 1,
    });
    expect(cost.notBilled).toEqual({ copiedBeforeReset: 3 });
  });

  it('a workflow task that failed for another cause is not a reset', () => {
    const cost = countHistoryCost(
      history(
        ['WORKFLOW_EXECUTION_STARTED', {}],
        ['WORKFLOW_TASK_SCHEDULED', {}],
        ['WORKFLOW_TASK_STARTED', {}],
        ['WORKFLOW_TASK_FAILED', { cause: 'WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE' }],
      ),
    );
    expect(cost.actionsByRule).toEqual({ workflowStarted: 1 });
  });

  it('reads a replay fixture ({ workflowId, history }) and the older PascalCase event types', () => {
    const fixture = {
      workflowId: '1',
      history: {
        events: [
          {
            eventId: '1',
            eventType: 'WorkflowExecutionStarted',
            workflowExecutionStartedEventAttributes: {},
          },
          { eventId: '2', eventType: 'TimerStarted', timerStartedEventAttributes: {} },
        ],
      },
    };
    expect(countHistoryCost(fixture)).toMatchObject({ events: 2, actions: 2 });
    expect(eventTypeOf({ eventType: 'UpsertWorkflowSearchAttributes' })).toBe(
      'UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
    );
  });

  it('refuses what is not a history', () => {
    expect(() => countHistoryCost({})).toThrow(HistoryFormatError);
    expect(() => countHistoryCost({ events: [] })).toThrow(HistoryFormatError);
    expect(() => countHistoryCost({ events: [{ eventId: '1' }] })).toThrow(/event 1 has no eventType/);
  });
});
