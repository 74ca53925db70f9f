/** The bench's CPU accounting reads Linux's /proc texts; these are the shapes it must read right. */
import { busyShare, cpuBusy, machineTicks, processCpuMs, type CpuReading } from '../../../bench/cpu';

// /proc/<pid>/stat: utime (field 14) 250 ticks, stime (field 15) 50 ticks.
const stat = (comm: string) => `4242 (${comm}) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 50 0 0 20 0 11 0 5000 1200000000 30000 18446744073709551615`;

describe('bench CPU accounting', () => {
  it("reads a process's user and system time, in milliseconds", () => {
    expect(processCpuMs(stat('node'))).toBe(3000);
  });

  it('reads it when the command name holds spaces and parentheses', () => {
    expect(processCpuMs(stat('node (bench) x'))).toBe(3000);
  });

  it('refuses a text without the time fields', () => {
    expect(() => processCpuMs('4242 (node) S 1')).toThrow(/unreadable/);
  });

  it("counts the machine's busy time without guest time, and idle and iowait as idle", () => {
    const text = 'cpu  100 10 40 800 50 5 5 0 30 0\ncpu0 50 5 20 400 25 2 3 0 15 0\nintr 12345\n';
    expect(machineTicks(text)).toEqual({ busy: 160, total: 1010 });
    expect(() => machineTicks('intr 1\n')).toThrow(/no cpu line/);
  });

  it('gives the busy share between two readings of the machine', () => {
    expect(busyShare({ busy: 100, total: 1000 }, { busy: 250, total: 1200 })).toBe(0.75);
    expect(busyShare({ busy: 100, total: 1000 }, { busy: 100, total: 1000 })).toBe(0);
  });

  it("gives the bench's processes' share of all cores over the window, beside the machine's", () => {
    const before: CpuReading<'a' | 'b'> = { groups: { a: 1000, b: 500 }, machine: { busy: 0, total: 0 }, atMs: 10_000 };
    // Over 2 s on 2 cores (4,000 ms of CPU time): the bench's processes used 1,200 + 1,000 ms, the machine was 90% busy.
    const after: CpuReading<'a' | 'b'> = { groups: { a: 2200, b: 1500 }, machine: { busy: 360, total: 400 }, atMs: 12_000 };
    expect(cpuBusy(before, after, 2)).toEqual({ cores: 2, bench: 0.55, machine: 0.9 });
  });
});
