// Compiled by stepTable.test.ts and by `npm run typecheck`: the step table must have a row for every step kind.
import type { Step, StepTable } from '../../src/workflows/attemptStep';
import { AFTER_STEP } from '../../src/workflows/orderConfirmationMail';

// Every kind there is has its row.
export const today: StepTable<Step, never, unknown> = AFTER_STEP;

// A new kind without its row does not compile.
type WithNewKind = Step | { kind: 'bounced'; attempt: number };
// @ts-expect-error: Property 'bounced' is missing.
export const withNewKind: StepTable<WithNewKind, never, unknown> = AFTER_STEP;
