// What "Predict next step" asks at a stop of a live session, chosen with no
// knowledge of the future (the replay's set, questions/next-step.ts, picks
// the variables that change from the recorded next state; a live session has
// none yet). The policy (docs/live-debugging.md#live-verification):
//   1. the next line;
//   2. the variables line L assigns (its targets: `x = …`, `x += …`,
//      `for x in …`, `with … as x`, `x := …`), whether they exist yet or not;
//   3. the visible locals line L names (it may mutate them: `xs.append(…)`);
//   4. up to two other visible locals, picked by the seeded generator, so
//      "nothing changes" is tested too;
// at most MAX_STATE state questions. Their truth is filled in when the
// session stops again (transition.ts); until then it is PENDING.
import { seededRng } from '../questions/rng';
import type { Question } from '../questions/schema';
import type { Trace, Value } from '../trace/schema';

export const MAX_STATE = 5;
const UNCHANGED = 2;

/** The truth of a question whose answer has not run yet: inexact, so nothing could ever judge it. */
export const PENDING: Value = { repr: '<not run yet>', type: 'unknown', literal: false, truncated: true };

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/g;
const KEYWORDS = new Set(['and', 'as', 'for', 'in', 'is', 'not', 'or', 'if', 'else', 'lambda', 'None', 'True', 'False', 'return', 'yield', 'with', 'del']);

/** The names line `text` assigns to: the targets of its assignment, loop, `with … as`, walrus. */
export function assignedNames(text: string): string[] {
  const code = text.replace(/#.*$/, '').replace(/(['"]).*?\1/g, '""');
  const targets: string[] = [];
  const add = (part: string) => {
    // Names followed by `.` or `[` are objects being changed, not rebound: still asked (rule 3), not here.
    const bare = part.replace(/\[[^\]]*\]/g, '[]'); // a subscript's names are read, not assigned
    for (const m of bare.matchAll(IDENT)) {
      const after = bare[m.index! + m[0].length];
      const before = bare[m.index! - 1];
      if (!KEYWORDS.has(m[0]) && before !== '.' && after !== '.' && after !== '(' && after !== '[') targets.push(m[0]);
    }
  };
  const loop = /^\s*(?:async\s+)?for\s+(.+?)\s+in\s/.exec(code);
  if (loop) add(loop[1]!);
  for (const m of code.matchAll(/\bas\s+([A-Za-z_]\w*)/g)) targets.push(m[1]!);
  for (const m of code.matchAll(/([A-Za-z_]\w*)\s*:=/g)) targets.push(m[1]!);
  // Statement assignment: what stands before each `=` outside brackets (not ==, <=, >=, !=, nor a keyword argument).
  if (!loop && !/^\s*(if|elif|while|return|assert|def|lambda|class)\b/.test(code)) {
    let depth = 0;
    let from = 0;
    for (let i = 0; i < code.length; i++) {
      const c = code[i]!;
      if ('([{'.includes(c)) depth++;
      else if (')]}'.includes(c)) depth--;
      else if (c === '=' && depth === 0 && code[i + 1] !== '=' && !'=<>!'.includes(code[i - 1] ?? '')) {
        add(
          code
            .slice(from, i)
            .replace(/[-+*/%&|^@<>:]+$/, '')
            .replace(/:.*/, ''),
        );
        from = i + 1;
      }
    }
  }
  return [...new Set(targets)];
}

/**
 * The questions for the `line` event at `step` of a live stop's trace
 * (transition.liveTrace), by the policy above; every truth PENDING.
 */
export function liveQuestions(trace: Trace, step: number, seed: number, locals: Record<string, Value>): Question[] {
  const s = trace.steps[step]!;
  const lineText = ((trace.files[s.file]?.source ?? '').split('\n')[s.line - 1] ?? '').trim();
  const where = { fn: s.fn, frame: s.frame, line: s.line, lineText, k: 1 };
  const visible = Object.keys(locals);
  const mentioned = new Set([...lineText.replace(/(['"]).*?\1/g, '""').matchAll(IDENT)].map((m) => m[0]));
  const first = [...assignedNames(lineText), ...visible.filter((n) => mentioned.has(n))];
  const picked = [...new Set(first)].slice(0, MAX_STATE);
  const rest = seededRng(seed).shuffle(visible.filter((n) => !picked.includes(n)));
  picked.push(...rest.slice(0, Math.min(UNCHANGED, MAX_STATE - picked.length)));
  return [
    { kind: 'next_line', id: `next_line:${s.line}:1`, ...where, truth: { line: 0, text: '' } },
    ...picked.map((name): Question => ({ kind: 'state', id: `state:${s.line}:1:${name}`, ...where, var: name, truth: PENDING })),
  ];
}
