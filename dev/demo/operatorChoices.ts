// Which act the operator of the operator-chaos run makes next (operators.ts): each kind of act with its weight,
// drawn at random, and the name the operator's log gives it (operatorTools.ts's act names).
import type { OperatorActName } from './operatorTools';

export type Choice =
  | 'cancel'
  | 'terminate'
  | 'reset-first'
  | 'reset-last'
  | 'pause'
  | 'activity-reset'
  | 'update-options'
  | 'retry'
  | 'resolve'
  | 'resend';

/** How often each act is chosen: the activity acts are weighted up, since a send in flight is short. */
const WEIGHTS: [Choice, number][] = [
  ['cancel', 1],
  ['terminate', 1],
  ['reset-first', 1],
  ['reset-last', 1],
  ['pause', 1.5],
  ['activity-reset', 1],
  ['update-options', 1],
  ['retry', 1],
  ['resolve', 1.5],
  ['resend', 1],
];

export const NAMES: Record<Choice, OperatorActName> = {
  cancel: 'workflow-cancel',
  terminate: 'workflow-terminate',
  'reset-first': 'workflow-reset-first',
  'reset-last': 'workflow-reset-last',
  pause: 'activity-pause',
  'activity-reset': 'activity-reset',
  'update-options': 'activity-update-options',
  retry: 'ops-retry',
  resolve: 'ops-resolve-sent',
  resend: 'ops-resolve-failed',
};

export function choose(draw: number): Choice {
  const total = WEIGHTS.reduce((sum, [, weight]) => sum + weight, 0);
  let left = draw * total;
  for (const [choice, weight] of WEIGHTS) {
    left -= weight;
    if (left < 0) return choice;
  }
  return WEIGHTS[WEIGHTS.length - 1]![0];
}
