// Ctrl-C and its kin during a run: SIGINT, SIGTERM and SIGHUP turn into an Interrupted error at the runner's
// next await, so it stops everything it started before it exits (a second Ctrl-C only hurries it).

export class Interrupted extends Error {
  override readonly name = 'Interrupted';
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
  }
}

export interface SignalWatch {
  /** Rejects with Interrupted as soon as a signal arrives, whatever `work` does. */
  race<T>(work: Promise<T>): Promise<T>;
  check(): void;
  dispose(): void;
}

/** SIGINT, SIGTERM and SIGHUP turn into an Interrupted error at the next await; a second Ctrl-C hurries. */
export function watchSignals(): SignalWatch {
  let received: NodeJS.Signals | null = null;
  const waiters = new Set<(signal: NodeJS.Signals) => void>();
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== null) {
      process.stderr.write('still cleaning up; one moment…\n');
      return;
    }
    received = signal;
    for (const wake of waiters) wake(signal);
  };
  for (const signal of signals) process.on(signal, onSignal);
  return {
    race(work) {
      if (received !== null) return Promise.reject(new Interrupted(received));
      let wake: ((signal: NodeJS.Signals) => void) | undefined;
      const interrupted = new Promise<never>((_, reject) => {
        wake = (signal) => reject(new Interrupted(signal));
        waiters.add(wake);
      });
      // The abandoned work may still fail later; that must not surface as an unhandled rejection.
      work.catch(() => undefined);
      return Promise.race([work, interrupted]).finally(() => waiters.delete(wake!));
    },
    check() {
      if (received !== null) throw new Interrupted(received);
    },
    dispose() {
      for (const signal of signals) process.removeListener(signal, onSignal);
    },
  };
}
