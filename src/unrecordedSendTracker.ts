// Sends this process ran that may not be recorded yet, for a stopping worker to wait on (docs/design.md §6,
// "Shutdown grace").
import type { OrderMailActivities } from './activities';
import { countStillSending, type SendAttemptKey } from './db/stillSendingCount';
import type { Database } from './db/pool';

// Long after any record would have run: such an entry was recorded elsewhere, or its run went away.
const FORGET_AFTER_MS = 60 * 60_000;
const POLL_EVERY_MS = 200;

export class UnrecordedSendTracker {
  private readonly sends = new Map<string, SendAttemptKey & { since: number }>();

  /** The activities, with their sends and records counted; otherwise unchanged. */
  track(activities: OrderMailActivities): OrderMailActivities {
    return {
      ...activities,
      sendOrderMail: async (input) => {
        this.add(input);
        return activities.sendOrderMail(input);
      },
      recordOrderMailOutcome: async (input) => {
        const recorded = await activities.recordOrderMailOutcome(input);
        this.sends.delete(keyOf(input));
        return recorded;
      },
    };
  }

  get size(): number {
    return this.sends.size;
  }

  /** Resolves when all are recorded or at `deadline`; returns how many were left. */
  async waitUntilRecorded(db: Database, deadline: number): Promise<number> {
    for (;;) {
      const sends = [...this.sends.values()];
      const left = await countStillSending(db, sends).catch(() => sends.length);
      if (left === 0) {
        this.sends.clear();
        return 0;
      }
      if (Date.now() >= deadline) return left;
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_EVERY_MS, deadline - Date.now())));
    }
  }

  private add(send: SendAttemptKey): void {
    const now = Date.now();
    for (const [key, entry] of this.sends) if (now - entry.since > FORGET_AFTER_MS) this.sends.delete(key);
    this.sends.set(keyOf(send), {
      orderId: send.orderId,
      claimToken: send.claimToken,
      attempt: send.attempt,
      since: now,
    });
  }
}

function keyOf(send: SendAttemptKey): string {
  return `${send.orderId}/${send.claimToken}/${send.attempt}`;
}
