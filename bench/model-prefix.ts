// Prompt prefix sharing, for bench/model.bench.ts: for the questions about one
// traced call, how much of the prompt text is a prefix every prompt shares —
// what a server with prefix caching (vLLM, SGLang) computes once per call
// instead of once per prompt. Real programs: the first CRUXEval samples, read
// from ../shared/benchmarks (relative to the repository root).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { prepareAsk } from '../src/engine/ask';
import { loadTemplates, renderPrompts } from '../src/engine/model/templates';
import { asText } from '../src/engine/model/prompt';
import { TracerPool } from '../src/engine/trace/runner';

const DATA = path.resolve(__dirname, '..', '..', 'shared', 'benchmarks', 'cruxeval', 'cruxeval.jsonl');
const PROGRAMS = 40;

type Share = (prompts: string[]) => { prompts: number; tokens: number; commonPrefix: number; share: number };

export async function measurePrefixSharing(share: Share): Promise<void> {
  if (!existsSync(DATA)) {
    throw new Error(
      `prefix sharing needs the CRUXEval data at ${DATA} (../shared/benchmarks/cruxeval/cruxeval.jsonl from the repository root); it is not in the repository`,
    );
  }
  const rows = readFileSync(DATA, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, PROGRAMS)
    .map((l) => JSON.parse(l) as { code: string; input: string; id: string });
  const loaded = await loadTemplates(undefined);
  if (!loaded.ok) throw new Error(loaded.error);
  const templates = [...loaded.templates.values()].filter((t) => t.format !== 'next_step_json');
  const pool = new TracerPool({ size: 2 });
  const totals = new Map<string, { calls: number; prompts: number; tokens: number; shared: number; questionsPerCall: number }>();
  try {
    for (const row of rows) {
      const call = `f(${row.input})`;
      let trace;
      try {
        trace = await pool.trace({ source: row.code, path: `${row.id}.py`, entry: { kind: 'call', expr: call } });
      } catch {
        continue;
      }
      for (const template of templates) {
        // The prompts the editor, `execverify ask` and a harvest send for this call (engine/ask).
        const { prompts } = prepareAsk(trace, template, { kind: 'call' });
        if (prompts.length === 0) continue;
        const questions = prompts.flatMap((p) => p.questions);
        const t = totals.get(template.name) ?? { calls: 0, prompts: 0, tokens: 0, shared: 0, questionsPerCall: 0 };
        let s;
        if (prompts.length > 1) {
          s = share(prompts.map((p) => asText(p.prompt)));
        } else {
          // One prompt holds every question: the shareable part is what it has in common with the
          // prompt for another call of the same code (instructions and code, up to the call).
          const text = asText(prompts[0]!.prompt);
          const elsewhere = questions.map((q) => ('call' in q ? { ...q, call: 'other_call()' } : q));
          const other = asText(renderPrompts(template, elsewhere, { code: row.code, call: 'other_call()' }).prompts[0]!.prompt);
          const common = share([text, other]).commonPrefix;
          const tokens = share([text]).tokens;
          s = { prompts: 1, tokens, commonPrefix: common, share: tokens ? common / tokens : 0 };
        }
        t.calls++;
        t.prompts += s.prompts;
        t.tokens += s.tokens;
        t.shared += s.commonPrefix * s.prompts;
        t.questionsPerCall += questions.length;
        totals.set(template.name, t);
      }
    }
  } finally {
    await pool.close();
  }
  console.log(`\nprompt prefix sharing over ${rows.length} CRUXEval calls (approximate tokens: words and punctuation)`);
  console.log('template          prompts/call  questions/call  tokens/call  shared prefix  note');
  for (const [name, t] of totals) {
    const perCall = t.prompts / t.calls;
    const note =
      perCall > 1
        ? 'one question per prompt: share of all prompt tokens in the common prefix'
        : 'one prompt per call: share in common with the prompt for another call of the same code';
    console.log(
      `${name.padEnd(16)}  ${perCall.toFixed(1).padStart(12)}  ${(t.questionsPerCall / t.calls).toFixed(1).padStart(14)}  ${(t.tokens / t.calls).toFixed(0).padStart(11)}  ${((t.shared / t.tokens) * 100).toFixed(1).padStart(12)}%  ${note}`,
    );
  }
}
