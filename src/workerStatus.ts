import type { Dependency, DependencyWaitReport } from './dependencyRetry';
import type { WorkerLiveness } from './metrics/workerHttpServer';
import { logWorker as log } from './workerLog';

/** What the process is doing, for /healthz, /readyz and the log. */
export class WorkerStatus {
  state: WorkerLiveness = 'waiting';
  waitingFor: string | null = null;

  /** Each dependency as an operator finds it: address and setting (`Postgres at db:5432/shop (DATABASE_URL)`). */
  constructor(private readonly targets: Record<Dependency, string>) {}

  waiting(report: DependencyWaitReport, logIt: boolean): void {
    this.state = 'waiting';
    const target = this.targets[report.dependency];
    this.waitingFor = `${target}: ${report.reason}`;
    if (logIt) {
      log('info', `Waiting for ${target}`, {
        reason: report.reason,
        attempt: report.attempt,
        nextTryInMs: report.nextTryInMs,
      });
    }
  }

  set(state: WorkerLiveness): void {
    this.state = state;
    if (state !== 'waiting') this.waitingFor = null;
  }
}
