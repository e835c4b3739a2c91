// Measures, over one phase of the benchmark, how much CPU each part used (worker processes, the Temporal
// server and, on the stack, its own Postgres, our Postgres, the mail sandbox, this harness, and the whole
// machine) and each worker's peak RSS.
import os from 'node:os';
import { machineCpuTicks } from './machine';
import { cpuSecondsOf, memoryOf, resetPeakRss, treeCpuSeconds } from './procStats';

export interface MeteredProcesses {
  /** The worker processes of the variant being measured. */
  workers: number[];
  temporalServer: number | null;
  /** The Temporal server's own Postgres (the stack's), postmaster and backends; null for the dev server. */
  temporalStore: number | null;
  /** Our postmaster; its children (one per connection) are counted with it. */
  postgres: number | null;
  sandbox: number | null;
}

export interface PhaseResources {
  wallSeconds: number;
  /** CPU seconds used during the phase, summed over the variant's worker processes. */
  workerCpuSeconds: number;
  /** Per worker process: CPU seconds and peak RSS (MiB) during the phase. */
  perWorker: { pid: number; cpuSeconds: number; peakRssMiB: number }[];
  temporalServerCpuSeconds: number | null;
  temporalStoreCpuSeconds: number | null;
  postgresCpuSeconds: number | null;
  sandboxCpuSeconds: number | null;
  harnessCpuSeconds: number;
  /** Cores the whole machine kept busy on average (everything, other people's work included). */
  machineBusyCores: number | null;
}

const RSS_SAMPLE_INTERVAL_MS = 250;

export class ResourceMeter {
  private readonly startCpu: Map<string, number> = new Map();
  private readonly peakRss: Map<number, number> = new Map();
  private readonly kernelPeakReset: Set<number> = new Set();
  private startedAt = 0;
  private harnessStart = process.cpuUsage();
  private machineStart = machineCpuTicks();
  private sampler: NodeJS.Timeout | null = null;

  constructor(private readonly processes: MeteredProcesses) {}

  begin(): void {
    const { workers, temporalServer, temporalStore, postgres, sandbox } = this.processes;
    for (const pid of workers) {
      this.startCpu.set(`worker:${pid}`, cpuSecondsOf(pid) ?? 0);
      if (resetPeakRss(pid)) this.kernelPeakReset.add(pid);
      this.peakRss.set(pid, memoryOf(pid)?.rssMiB ?? 0);
    }
    if (temporalServer !== null) this.startCpu.set('server', cpuSecondsOf(temporalServer) ?? 0);
    if (temporalStore !== null) this.startCpu.set('store', treeCpuSeconds(temporalStore));
    if (postgres !== null) this.startCpu.set('postgres', treeCpuSeconds(postgres));
    if (sandbox !== null) this.startCpu.set('sandbox', cpuSecondsOf(sandbox) ?? 0);
    this.harnessStart = process.cpuUsage();
    this.machineStart = machineCpuTicks();
    this.startedAt = performance.now();
    // Sampling is the fallback where the kernel's peak mark could not be reset; it also catches a peak the
    // kernel mark would miss if the reset failed for one process only.
    this.sampler = setInterval(() => this.sampleRss(), RSS_SAMPLE_INTERVAL_MS);
    this.sampler.unref();
  }

  end(): PhaseResources {
    if (this.sampler !== null) clearInterval(this.sampler);
    this.sampleRss();
    const wallSeconds = (performance.now() - this.startedAt) / 1000;
    const { workers, temporalServer, temporalStore, postgres, sandbox } = this.processes;
    const perWorker = workers.map((pid) => {
      const memory = memoryOf(pid);
      const sampled = this.peakRss.get(pid) ?? 0;
      const kernelPeak = this.kernelPeakReset.has(pid) ? (memory?.peakRssMiB ?? 0) : 0;
      return {
        pid,
        cpuSeconds: (cpuSecondsOf(pid) ?? 0) - (this.startCpu.get(`worker:${pid}`) ?? 0),
        peakRssMiB: Math.max(sampled, kernelPeak),
      };
    });
    const delta = (key: string, now: number | null): number | null =>
      now === null || !this.startCpu.has(key) ? null : now - this.startCpu.get(key)!;
    const harness = process.cpuUsage(this.harnessStart);
    const machineEnd = machineCpuTicks();
    const machineBusyCores =
      this.machineStart === null || machineEnd === null || machineEnd.total === this.machineStart.total
        ? null
        : ((machineEnd.busy - this.machineStart.busy) / (machineEnd.total - this.machineStart.total)) *
          os.cpus().length;
    return {
      wallSeconds,
      workerCpuSeconds: perWorker.reduce((sum, worker) => sum + worker.cpuSeconds, 0),
      perWorker,
      temporalServerCpuSeconds: delta(
        'server',
        temporalServer === null ? null : cpuSecondsOf(temporalServer),
      ),
      temporalStoreCpuSeconds: delta('store', temporalStore === null ? null : treeCpuSeconds(temporalStore)),
      postgresCpuSeconds: delta('postgres', postgres === null ? null : treeCpuSeconds(postgres)),
      sandboxCpuSeconds: delta('sandbox', sandbox === null ? null : cpuSecondsOf(sandbox)),
      harnessCpuSeconds: (harness.user + harness.system) / 1e6,
      machineBusyCores,
    };
  }

  private sampleRss(): void {
    for (const pid of this.processes.workers) {
      const rss = memoryOf(pid)?.rssMiB ?? 0;
      if (rss > (this.peakRss.get(pid) ?? 0)) this.peakRss.set(pid, rss);
    }
  }
}
