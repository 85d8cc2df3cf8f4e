// Re-runs harvested samples in one fresh, isolated interpreter (-I: no
// project on sys.path, cwd /), each in its own empty namespace with nothing but
// its own code — the proof that a kept sample is really self-contained.
import { execFileSync } from 'node:child_process';

const PROGRAM = [
  'import json, sys',
  'bad = []',
  'for line in sys.stdin:',
  '    r = json.loads(line)',
  '    ns = {"__name__": "sample"}',
  '    exec(compile(r["code"], "<sample>", "exec"), ns)',
  '    v = eval(r["entry"], ns)',
  '    if (repr(v), type(v).__name__) != (r["result"]["repr"], r["result"]["type"]): bad.append(r["entry"])',
  'print(json.dumps(bad))',
].join('\n');

/** Returns the entries whose standalone result differs from the recorded one. */
export function samplesThatDoNotReproduce(python: string, records: readonly unknown[]): string[] {
  const input = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
  return JSON.parse(execFileSync(python, ['-I', '-c', PROGRAM], { input, encoding: 'utf8', cwd: '/' })) as string[];
}
