// What a harvest's questions ask about: re-traces every stored sample of a
// store (DIR/samples.jsonl) and prints the shares issue 22 measures — state
// questions about a variable the line leaves unchanged, class-valued state
// questions, Nil answers, trivial samples (≤ 2 distinct lines run).
//
//   node --import tsx bench/question-shares.ts DIR
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeTrace } from '../src/engine/trace/decode';
import { TracerPool } from '../src/engine/trace/runner';
import { entryFrame } from '../src/engine/questions';
import { isTrivialRun } from '../src/engine/questions/teach';

interface StoredQuestion {
  kind: string;
  line?: number;
  k?: number;
  var?: string;
  truth?: { nil?: boolean; repr?: string; type?: string };
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: question-shares.ts DIR');
  const records = readFileSync(join(dir, 'samples.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as { code: string; entry: string; questions: StoredQuestion[] });
  const pool = new TracerPool({ size: 4 });
  let state = 0;
  let unchanged = 0;
  let nil = 0;
  let classValued = 0;
  let trivial = 0;
  try {
    for (const r of records) {
      const trace = await pool.trace({ source: r.code, path: 'sample.py', entry: { kind: 'call', expr: r.entry } });
      const d = decodeTrace(trace);
      if (isTrivialRun(trace, d)) trivial++;
      const frame = entryFrame(d);
      for (const q of r.questions) {
        if (q.kind !== 'state') continue;
        state++;
        if (q.truth?.nil) {
          nil++;
          continue;
        }
        if (/^<(class|enum) '/.test(q.truth?.repr ?? '')) classValued++;
        if (!frame) continue;
        const runs = frame.steps.filter((i) => d.steps[i]!.event === 'line' && d.steps[i]!.line === q.line);
        const at = runs[(q.k ?? 1) - 1];
        if (at === undefined) continue;
        const next = frame.steps[frame.steps.indexOf(at) + 1];
        const before = d.locals(at)[q.var!];
        const afterV = next !== undefined ? d.locals(next)[q.var!] : undefined;
        if (before && afterV && before.repr === afterV.repr && before.type === afterV.type) unchanged++;
      }
    }
  } finally {
    pool.close();
  }
  const pct = (a: number, b: number) => (b ? `${((100 * a) / b).toFixed(1)}%` : '-');
  console.log(`samples ${records.length}, trivial (≤ 2 lines run, or an identity) ${trivial} (${pct(trivial, records.length)})`);
  console.log(`state questions ${state}: unchanged ${unchanged} (${pct(unchanged, state)}), Nil ${nil} (${pct(nil, state)}), class-valued ${classValued}`);
}

void main();
