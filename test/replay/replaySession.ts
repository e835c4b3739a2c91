// One replay worker per bundle for a whole test file, fed one history per test. Worker.runReplayHistory makes a
// replay worker for each history, and each one loads the bundle into new V8 contexts: most of the file's CPU
// when it replayed 27 histories twice (issue 38). Worker.runReplayHistories replays them one after the other
// on one worker, each reported on its own, as a DeterminismViolationError when the code no longer fits.
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';

interface Queued {
  history: unknown;
  workflowId: string;
  settle: (error: Error | undefined) => void;
}

export interface ReplaySession {
  /** Replays one history on the session's worker; rejects with what Worker.runReplayHistory would throw. */
  replay(history: unknown, workflowId: string): Promise<void>;
  /** Shuts the worker down once the histories handed in are replayed. */
  close(): Promise<void>;
}

export function startReplaySession(options: ReplayWorkerOptions): ReplaySession {
  const waiting: Queued[] = [];
  const replaying: Queued[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  let failed: Error | null = null;

  async function* histories() {
    for (;;) {
      const next = waiting.shift();
      if (next !== undefined) {
        replaying.push(next);
        // A history the replayer cannot read stops the worker: this test and those after it fail with why.
        yield { history: next.history, workflowId: next.workflowId };
      } else if (closed) {
        return;
      } else {
        await new Promise<void>((resolve) => (wake = resolve));
      }
    }
  }

  const done = (async () => {
    try {
      // In the order they were handed in: the worker replays one history at a time.
      for await (const result of Worker.runReplayHistories(options, histories())) {
        replaying.shift()?.settle(result.error);
      }
    } catch (error) {
      failed = error instanceof Error ? error : new Error(String(error));
    }
    for (const queued of [...replaying.splice(0), ...waiting.splice(0)]) {
      queued.settle(failed ?? new Error('the replay worker stopped before this history was replayed'));
    }
  })();

  const wakeUp = (): void => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };

  return {
    replay(history, workflowId) {
      if (closed || failed !== null) {
        return Promise.reject(failed ?? new Error('the replay session is closed'));
      }
      return new Promise<void>((resolve, reject) => {
        waiting.push({
          history,
          workflowId,
          settle: (error) => (error === undefined ? resolve() : reject(error)),
        });
        wakeUp();
      });
    },
    async close() {
      closed = true;
      wakeUp();
      await done;
    },
  };
}
