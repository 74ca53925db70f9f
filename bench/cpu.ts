/**
 * Where `npm run bench` spends the machine's CPU, from Linux's /proc: what each group of the bench's processes used
 * (`cpuMsPerPod`), and how busy the cores were while the pods were placed (`cpuBusy`). On AWS each Lambda environment,
 * the store and the cluster have CPUs of their own; here they share the machine's cores, and when those are nearly
 * always busy every hop between processes also waits for a core. `cpuBusy` says how close a run came to that, so a
 * reader can tell a figure bound by the machine from one bound by the product. Nothing here where /proc is missing.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Clock ticks per millisecond in /proc's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_MS = 100 / 1000;

/** User plus system CPU time of one process (all its threads) in milliseconds, from the text of `/proc/<pid>/stat`. */
export function processCpuMs(statText: string): number {
  // The command name (field 2) is in parentheses and may itself hold spaces and parentheses: count from the last one.
  const fields = statText.slice(statText.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15; fields[0] here is field 3 (state).
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error('unreadable /proc/<pid>/stat');
  return (utime + stime) / TICKS_PER_MS;
}

/** The machine's CPU time since boot, all cores together, from the text of `/proc/stat`: busy and in all, in ticks. */
export interface MachineTicks {
  readonly busy: number;
  readonly total: number;
}

export function machineTicks(procStatText: string): MachineTicks {
  const line = procStatText.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) throw new Error('no cpu line in /proc/stat');
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already counted in user and nice.
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/** The share of the machine's CPU time that was busy between two readings (0 to 1). */
export function busyShare(before: MachineTicks, after: MachineTicks): number {
  const total = after.total - before.total;
  return total > 0 ? (after.busy - before.busy) / total : 0;
}

/** What one reading holds: each group's CPU milliseconds, the machine's ticks, and when it was taken. */
export interface CpuReading<Group extends string> {
  readonly groups: Record<Group, number>;
  readonly machine: MachineTicks;
  readonly atMs: number;
}

/** Reads the CPU time of each group of processes and of the machine; null where there is no /proc. */
export function readCpu<Group extends string>(groups: Record<Group, readonly (number | undefined)[]>, nowMs: number): CpuReading<Group> | null {
  if (!existsSync('/proc/self/stat') || !existsSync('/proc/stat')) return null;
  const of = (pid: number | undefined): number => {
    if (pid === undefined) return 0;
    try {
      return processCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return 0; // the process has ended: it adds nothing more
    }
  };
  const out = {} as Record<Group, number>;
  for (const [group, pids] of Object.entries(groups) as [Group, readonly (number | undefined)[]][]) out[group] = pids.reduce((sum: number, pid) => sum + of(pid), 0);
  return { groups: out, machine: machineTicks(readFileSync('/proc/stat', 'utf8')), atMs: nowMs };
}

/**
 * How busy the cores were between two readings: `bench`, the share of the machine's CPU time (all its cores over the
 * window) that the bench's own processes used; `machine`, the share that anything used (the bench and whatever else
 * runs on the machine); `cores`, how many the bench could use.
 */
export interface CpuBusy {
  readonly cores: number;
  readonly bench: number;
  readonly machine: number;
}

export function cpuBusy<Group extends string>(before: CpuReading<Group>, after: CpuReading<Group>, cores = availableParallelism()): CpuBusy {
  const windowMs = after.atMs - before.atMs;
  let used = 0;
  for (const group of Object.keys(after.groups) as Group[]) used += after.groups[group] - (before.groups[group] ?? 0);
  return { cores, bench: windowMs > 0 ? used / (windowMs * cores) : 0, machine: busyShare(before.machine, after.machine) };
}
