// Holds one order's claim, send or record activity at its start until the test releases it: a worker that
// stalls there (a GC pause, a slow network), so a test can act (cancel, reset, terminate) while that step is
// under way. The activity then runs as deployed.
import type { OrderMailActivities } from '../../src/activities';

export type HeldStep = 'claim' | 'send' | 'record';

export interface Hold {
  step: HeldStep;
  /** The held activity has started (and waits). */
  entered: boolean;
  release(): void;
  /** The held activity's own outcome, once released. */
  done: Promise<unknown> | null;
}

export class ActivityHolds {
  private readonly holds = new Map<string, Hold>();

  /** Holds the next `step` activity of `orderId` (once). */
  holdAt(orderId: string, step: HeldStep): Hold {
    const hold: Hold = { step, entered: false, release: () => undefined, done: null };
    this.holds.set(orderId, hold);
    return hold;
  }

  releaseAll(): void {
    for (const hold of this.holds.values()) hold.release();
  }

  /** The activities with claim, send and record holdable. */
  wrap(activities: OrderMailActivities): OrderMailActivities {
    return {
      ...activities,
      claimOrderMail: this.holdable('claim', activities.claimOrderMail),
      sendOrderMail: this.holdable('send', activities.sendOrderMail),
      recordOrderMailOutcome: this.holdable('record', activities.recordOrderMailOutcome),
    };
  }

  private holdable<Input extends { orderId: string }, Output>(
    step: HeldStep,
    activity: (input: Input) => Promise<Output>,
  ): (input: Input) => Promise<Output> {
    return (input) => {
      const hold = this.holds.get(input.orderId);
      if (hold === undefined || hold.step !== step || hold.entered) return activity(input);
      hold.entered = true;
      const gate = new Promise<void>((resolve) => (hold.release = resolve));
      const done = gate.then(() => activity(input));
      hold.done = done.catch(() => undefined);
      return done;
    };
  }
}
