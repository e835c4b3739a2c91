// What the figures were measured on. Every headline figure is a ratio of two things measured in the same run,
// but a reader still needs to know how busy the machine was while it ran.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface MachineFacts {
  date: string;
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  nodeVersion: string;
  platform: string;
  /** 1, 5 and 15 minute load averages when the run started and when it ended. */
  loadAverageAtStart: [number, number, number];
  loadAverageAtEnd: [number, number, number] | null;
}

export function machineFacts(): MachineFacts {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    nodeVersion: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    loadAverageAtStart: loadAverage(),
    loadAverageAtEnd: null,
  };
}

export function loadAverage(): [number, number, number] {
  const [one = 0, five = 0, fifteen = 0] = os.loadavg();
  return [round2(one), round2(five), round2(fifteen)];
}

/** Busy and total jiffies of the whole machine, from /proc/stat: how much CPU anything used. */
export function machineCpuTicks(): { busy: number; total: number } | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice; guest is already counted in user.
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return null;
  }
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
