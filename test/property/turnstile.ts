// Lets exactly one racer run at a time, and lets the test choose which: every SQL statement a racer makes waits
// at the turnstile until the driver lets it through. Each state change in order_mail_log is one statement, so
// interleaving whole statements explores every order in which concurrent workers could apply them.
import type { QueryResultRow } from 'pg';
import type { Database } from '../../src/db/pool';

interface Waiter {
  label: string;
  pass: () => void;
}

export class Turnstile {
  private readonly waiting: Waiter[] = [];
  private running = 0;
  private wake: (() => void) | null = null;
  private failure: Error | null = null;

  /** A Database whose every statement waits for its turn. Transactions are not needed by the racers. */
  gated(db: Database, label: string): Database {
    return {
      query: async <Row extends QueryResultRow>(sql: string, params?: readonly unknown[]) => {
        await this.turn(label);
        return db.query<Row>(sql, params);
      },
      transaction: () => Promise.reject(new Error('racers make single statements only')),
      close: () => Promise.resolve(),
    };
  }

  /** Starts a racer thread; it runs until its first statement waits for a turn. */
  spawn(work: () => Promise<void>): void {
    this.running += 1;
    void work()
      .catch((error: unknown) => {
        this.failure ??= error instanceof Error ? error : new Error(String(error));
      })
      .finally(() => {
        this.running -= 1;
        this.notify();
      });
  }

  /**
   * Runs `works` as threads of their own (two executions of one activity at once) and waits for all of them.
   * The caller does not count as running meanwhile, and runs again, alone, once the last one is done.
   */
  async all<T>(works: (() => Promise<T>)[]): Promise<T[]> {
    const results: T[] = [];
    const outcome: { failure: Error | null } = { failure: null };
    let remaining = works.length;
    this.running -= 1;
    await new Promise<void>((resume) => {
      works.forEach((work, index) => {
        this.running += 1;
        void work()
          .then(
            (result) => {
              results[index] = result;
            },
            (error: unknown) => {
              outcome.failure ??= error instanceof Error ? error : new Error(String(error));
            },
          )
          .finally(() => {
            remaining -= 1;
            // The caller counts as running again before the last thread stops counting, so the driver never
            // sees a quiet moment in between.
            if (remaining === 0) {
              this.running += 1;
              resume();
            }
            this.running -= 1;
            this.notify();
          });
      });
    });
    if (outcome.failure !== null) throw outcome.failure;
    return results;
  }

  /**
   * Lets waiting statements through one at a time, picking each from `choices` (then the longest waiting),
   * and calls `afterStep` whenever nobody runs. Resolves when every thread has finished; rethrows a
   * thread's failure.
   */
  async drive(choices: readonly number[], afterStep: (label: string) => Promise<void>): Promise<void> {
    let step = 0;
    for (;;) {
      await this.quiescent();
      this.rethrow();
      if (this.waiting.length === 0) return;
      const choice = choices[step] ?? 0;
      step += 1;
      const [next] = this.waiting.splice(choice % this.waiting.length, 1);
      this.running += 1;
      next!.pass();
      await this.quiescent();
      this.rethrow();
      await afterStep(next!.label);
    }
  }

  /** Waits for a turn without a statement: for steps of the scenario itself, such as a reset. */
  turn(label: string): Promise<void> {
    return new Promise<void>((pass) => {
      this.waiting.push({ label, pass });
      this.running -= 1;
      this.notify();
    });
  }

  private rethrow(): void {
    if (this.failure !== null) throw this.failure;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async quiescent(): Promise<void> {
    while (this.running > 0) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}
