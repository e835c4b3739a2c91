// A run whose send the dispatch fence refused because an operator holds sends (migration 0060) waits here: on
// the resume signal `npm run ops -- resume` sends, with a durable timer as the fallback should a signal be
// missed. The wait is no attempt of the run's (it spends none of maxSendAttempts) and asks nothing of
// Postgres while it lasts; after it the run claims again, and the fence decides again.
import { condition, defineSignal, isCancellation, setHandler } from '@temporalio/workflow';
import { SEND_HOLD_RESUME_SIGNAL } from '../shared/workflowContract';
import { endCancelled } from './endings';

// Runs whose history predates the hold treated a refused send as any other not-sent attempt; they had none.
export const SEND_HOLD_WAITS = 'send-hold-waits';

// Without a signal, a held run claims again after 1 min, then 2, 4, 8, and every 15 min from then on: a
// missed signal costs at most a quarter of an hour, and a day's hold about a hundred refused claims per run.
const FIRST_RECHECK_MS = 60_000;
const LONGEST_RECHECK_MS = 15 * 60_000;

const resumeSignal = defineSignal(SEND_HOLD_RESUME_SIGNAL);

export interface HoldWait {
  /** Waits for a resume signal or the fallback timer; `waits` is how many held waits came before. */
  wait(orderId: string, waits: number): Promise<void>;
}

/** Listens for the resume signal from the run's start, so a signal that arrives before the wait is kept. */
export function resumeOnSignal(): HoldWait {
  let resumed = false;
  setHandler(resumeSignal, () => {
    resumed = true;
  });
  return {
    async wait(orderId, waits) {
      const recheckMs = Math.min(FIRST_RECHECK_MS * 2 ** Math.min(waits, 10), LONGEST_RECHECK_MS);
      try {
        await condition(() => resumed, recheckMs);
      } catch (error) {
        if (!isCancellation(error)) throw error;
        throw endCancelled(
          `Order ${orderId}: cancelled while sends were held (npm run ops -- hold). Nothing is in flight: the log ` +
            'row is settled as failed/not_sent, and after the hold a reset or npm run ops -- retry sends the mail.',
        );
      }
      resumed = false;
    },
  };
}
