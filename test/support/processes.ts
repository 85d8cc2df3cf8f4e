// What a debugger test leaves behind, read with ps: lldb processes under this
// one, and any process whose command line holds `marker` wherever it runs —
// lldb starts the program in a process group of its own, and an orphan is no
// descendant of ours.
import { execFileSync } from 'node:child_process';

export function leftBehind(marker: string): string[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map(([, pid, ppid, args]) => ({ pid: pid!, ppid: ppid!, args: args! }));
  const mine = new Set([String(process.pid)]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows)
      if (!mine.has(r.pid) && mine.has(r.ppid)) {
        mine.add(r.pid);
        grew = true;
      }
  }
  return rows.filter((r) => (mine.has(r.pid) && /(?:^|\/)lldb/.test(r.args)) || r.args.includes(marker)).map((r) => `${r.pid} ${r.args}`);
}
