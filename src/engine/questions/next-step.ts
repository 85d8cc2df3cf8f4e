// The interactive "predict next step" question set (SEMANTICS §3): at a stop
// on line L (its k-th run in frame F), which line runs next, and the value and
// type of every variable line L assigns or changes — plus a few it leaves
// alone, so "nothing changes" is tested too.
import { decodeTrace, type DecodedTrace } from '../trace/decode';
import type { Trace } from '../trace/schema';
import { frameContext, nextLineQuestion, stateQuestion } from './generate';
import { seededRng } from './rng';
import type { Question } from './schema';

export interface NextStepOptions {
  /** Unchanged variables asked about as well (default 2). */
  unchanged?: number;
  seed?: number;
  /** Answers are line numbers in the interactive JSON prompt, so text ambiguity does not matter. */
  textMatchedNextLine?: boolean;
}

/**
 * Questions for the `line` event at `step`; empty when the step is not a line
 * event or the run ended (a limit) before the answer was recorded.
 */
export function nextStepQuestions(trace: Trace, step: number, options: NextStepOptions = {}, decoded: DecodedTrace = decodeTrace(trace)): Question[] {
  const s = decoded.steps[step];
  if (!s || s.event !== 'line') return [];
  const ctx = frameContext(trace, s.frame, decoded);
  const run = ctx?.runs.find((r) => r.step === step);
  if (!ctx || !run) return [];
  const out: Question[] = [];
  const next = nextLineQuestion(ctx, run, options.textMatchedNextLine ?? false);
  if (next) out.push(next);
  if (run.after === undefined) return out;
  const before = decoded.locals(step);
  const after = decoded.locals(run.after);
  const changed: string[] = [];
  const same: string[] = [];
  for (const [name, v] of Object.entries(after)) {
    const b = before[name];
    (b === undefined || b.repr !== v.repr || b.type !== v.type ? changed : same).push(name);
  }
  const rng = seededRng(options.seed ?? step);
  const picked = [...changed, ...rng.shuffle(same).slice(0, options.unchanged ?? 2)];
  for (const name of picked) {
    const q = stateQuestion(ctx, run, name);
    if (q) out.push(q);
  }
  return out;
}
