// CPU time and memory of one process (or a process and its children, for Postgres), read from /proc, so
// each worker PROCESS is measured on its own rather than the harness guessing from the outside.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

// Linux reports CPU times in clock ticks; USER_HZ is 100 on every mainstream kernel build.
const TICKS_PER_SECOND = 100;

/**
 * user + system CPU seconds of one process, or null when it is gone. With `withReapedChildren`, plus the CPU
 * of its children that have exited and been waited for (cutime + cstime).
 */
export function cpuSecondsOf(pid: number, withReapedChildren = false): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses; the fields after its last ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17): indexes 11 to 14 here.
    const own = Number(fields[11]) + Number(fields[12]);
    const reaped = withReapedChildren ? Number(fields[13]) + Number(fields[14]) : 0;
    return (own + reaped) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** Every live process id on the machine. */
function allPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name))
    .map(Number);
}

/** A process and all its descendants (Postgres serves each connection from a child of the postmaster). */
export function processTree(rootPid: number): number[] {
  const children = new Map<number, number[]>();
  for (const pid of allPids()) {
    const parent = parentOf(pid);
    if (parent === null) continue;
    const list = children.get(parent) ?? [];
    list.push(pid);
    children.set(parent, list);
  }
  const tree: number[] = [];
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    tree.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return tree;
}

/**
 * CPU seconds of a process tree, including processes of the tree that have already exited: Postgres ends a
 * backend when its connection closes, and the postmaster then holds that backend's CPU in its cutime and
 * cstime. Summing own + reaped-children time over the live tree counts every process exactly once.
 */
export function treeCpuSeconds(rootPid: number): number {
  return processTree(rootPid).reduce((sum, pid) => sum + (cpuSecondsOf(pid, true) ?? 0), 0);
}

/** The first process whose command line contains every one of `parts` as a whole argument. */
export function findProcess(parts: string[]): number | null {
  for (const pid of allPids()) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (parts.every((part) => args.includes(part))) return pid;
    } catch {
      // Gone between listing and reading.
    }
  }
  return null;
}

/** Resident set size now and its peak (VmHWM), in MiB. */
export function memoryOf(pid: number): { rssMiB: number; peakRssMiB: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string): number =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/**
 * Resets the kernel's peak-RSS mark (VmHWM) of a process, so the next reading is the peak of the measured
 * phase rather than of start-up (bundling the workflows with webpack peaks far above steady state).
 * Needs Linux ≥ 4.0 and permission over the process; returns false where that is not given.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
