// Where an order's time goes between the start and the end of its run, from the server's timestamps in its
// recorded history: the waits for a worker (dispatch) apart from the worker's own time. Pure: the bench
// fetches a sample of histories after each latency phase (never while it is measured).
import { eventTypeOf } from './cost/historyCost';

export const SEGMENTS = [
  /** Start → the first workflow task handed to a worker. */
  'firstTaskDispatch',
  /** The first workflow task in the worker: the run set up, the claim (local), the send scheduled. */
  'firstTask',
  /** The send scheduled → handed to a worker (0 when dispatched eagerly with the task's completion). */
  'sendDispatch',
  /** The send in the worker: read, fence, render, POST, until its result reached the server. */
  'send',
  /** The send's result → the next workflow task handed to a worker. */
  'secondTaskDispatch',
  /** The second workflow task in the worker: the record (local), the run completed. */
  'secondTask',
  /** Start → the run completed. */
  'run',
] as const;
export type Segment = (typeof SEGMENTS)[number];

/**
 * The segments of an accepted order's run (two workflow tasks around one regular activity), in ms; null for
 * any other shape (a retried send, a timer, a failed task), which the sample then leaves out.
 */
export function latencySegments(history: unknown): Record<Segment, number> | null {
  // `{ events }` as fetched, or a stored fixture `{ workflowId, history: { events } }`.
  const outer = history as {
    events?: Record<string, unknown>[];
    history?: { events?: Record<string, unknown>[] };
  };
  const events = outer.events ?? outer.history?.events ?? [];
  const at = (type: string, nth = 0): number | null => {
    const found = events.filter((event) => eventTypeOf(event) === type)[nth];
    if (found === undefined) return null;
    const time = found.eventTime;
    return typeof time === 'string' ? Date.parse(time) + fractionMs(time) : null;
  };
  const count = (type: string) => events.filter((event) => eventTypeOf(event) === type).length;
  if (count('WORKFLOW_TASK_STARTED') !== 2 || count('ACTIVITY_TASK_STARTED') !== 1) return null;
  if (count('WORKFLOW_TASK_FAILED') + count('WORKFLOW_TASK_TIMED_OUT') + count('TIMER_STARTED') > 0)
    return null;
  const times = {
    started: at('WORKFLOW_EXECUTION_STARTED'),
    firstTaskStarted: at('WORKFLOW_TASK_STARTED', 0),
    firstTaskCompleted: at('WORKFLOW_TASK_COMPLETED', 0),
    sendScheduled: at('ACTIVITY_TASK_SCHEDULED'),
    sendStarted: at('ACTIVITY_TASK_STARTED'),
    sendCompleted: at('ACTIVITY_TASK_COMPLETED'),
    secondTaskStarted: at('WORKFLOW_TASK_STARTED', 1),
    secondTaskCompleted: at('WORKFLOW_TASK_COMPLETED', 1),
    completed: at('WORKFLOW_EXECUTION_COMPLETED'),
  };
  if (Object.values(times).some((time) => time === null)) return null;
  const t = times as Record<keyof typeof times, number>;
  return {
    firstTaskDispatch: t.firstTaskStarted - t.started,
    firstTask: t.firstTaskCompleted - t.firstTaskStarted,
    sendDispatch: t.sendStarted - t.sendScheduled,
    send: t.sendCompleted - t.sendStarted,
    secondTaskDispatch: t.secondTaskStarted - t.sendCompleted,
    secondTask: t.secondTaskCompleted - t.secondTaskStarted,
    run: t.completed - t.started,
  };
}

export interface SegmentSummary {
  /** Runs of the accepted shape in the sample. */
  runs: number;
  p50Ms: Record<Segment, number>;
  p95Ms: Record<Segment, number>;
}

export function summarizeSegments(histories: unknown[]): SegmentSummary | null {
  const samples = histories.flatMap((history) => {
    const segments = latencySegments(history);
    return segments === null ? [] : [segments];
  });
  if (samples.length === 0) return null;
  const percentile = (segment: Segment, share: number): number => {
    const sorted = samples.map((sample) => sample[segment]).sort((a, b) => a - b);
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))]! * 10) / 10;
  };
  const each = (share: number) =>
    Object.fromEntries(SEGMENTS.map((segment) => [segment, percentile(segment, share)])) as Record<
      Segment,
      number
    >;
  return { runs: samples.length, p50Ms: each(0.5), p95Ms: each(0.95) };
}

/** Date.parse keeps milliseconds only; the history's timestamps carry nanoseconds. */
function fractionMs(time: string): number {
  const digits = /\.(\d+)Z$/.exec(time)?.[1] ?? '';
  return digits.length <= 3 ? 0 : Number(`0.${digits.slice(3)}`);
}
