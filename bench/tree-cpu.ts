// CPU time of a benchmark's process tree, for the benches that compare two
// ways of doing the same work (tracer.bench.ts, tracer_ab.ts).
import { readFileSync } from 'node:fs';

/**
 * CPU ms of this process and of every descendant it has reaped (Linux:
 * /proc/self/stat utime + stime + cutime + cstime, kernel-counted), or NaN
 * elsewhere: the work either side does, which wall time on two shared cores
 * hides (on a microVM it still moves between runs: a busy host makes the
 * same work cost more CPU).
 */
export function treeCpuMs(): number {
  try {
    const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / 100; // USER_HZ: 100 on Linux
  } catch {
    return NaN;
  }
}
