// What "Predict next step" asks at a stop of a live session, chosen with no
// knowledge of the future (the replay's set, questions/next-step.ts, picks
// the variables that change from the recorded next state; a live session has
// none yet). The policy (docs/live-debugging.md#live-verification):
//   1. the next line;
//   2. the variables line L assigns (its targets: `x = …`, `x += …`,
//      `for x in …`, `with … as x`, `x := …`; in C `x = …`, `x += …`,
//      `x++`/`--x`, `int x = …`, `for (int i = 0; …; i++)`, `a[i] = …` and
//      `p.x = …` change the local `a` and `p`), whether they exist yet or not;
//   3. the visible locals line L names (it may mutate them: `xs.append(…)`);
//   4. up to two other visible locals, picked by the seeded generator, so
//      "nothing changes" is tested too;
// at most MAX_STATE state questions, never a pointer (nor a C value holding
// one: its text holds an address the model cannot know). Their truth is
// filled in when the session stops again (transition.ts); until then it is PENDING.
import { holdsPointer } from '../dap/lldb-values';
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

/** C source with its comments, strings and char literals blanked: what is left is code. */
function cCode(text: string): string {
  return text
    .replace(/\/\*.*?\*\//g, ' ')
    .replace(/\/\/.*$/, '')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '0');
}

/** The lvalue that ends a text: an optional `*`, a name, then subscripts, `.field`s and `->field`s. */
const LVALUE = /(\*\s*)?([A-Za-z_]\w*)((?:\s*\[[^\]]*\]|\s*(?:\.|->)\s*[A-Za-z_]\w*)*)\s*$/;

/**
 * The locals C line `text` changes: the lvalue of each assignment (`=` and
 * the compound ones, declarations' initialisers included) and of each `++`
 * and `--`. An element or a field (`a[i] = …`, `p.x = …`) changes the local
 * `a` or `p` (a C array or struct is one value); a write through a pointer
 * (`*p = …`, `p->x = …`) changes no local, and a pointer (`int *p = …`) is
 * never asked.
 */
export function cAssignedNames(text: string): string[] {
  const code = cCode(text);
  const targets: string[] = [];
  const lvalue = (before: string) => {
    const m = LVALUE.exec(before);
    if (m && !m[1] && !m[3]!.includes('->')) targets.push(m[2]!);
  };
  for (let i = 0; i < code.length; i++) {
    if (code[i] !== '=' || code[i + 1] === '=' || code[i - 1] === '=') continue;
    const prev = code[i - 1] ?? '';
    let op = i;
    if ('+-*/%&|^'.includes(prev)) op = i - 1;
    else if (prev === '<' || prev === '>') {
      if (code[i - 2] !== prev) continue; // <= and >= compare
      op = i - 2; // <<= and >>=
    } else if (prev === '!') continue;
    lvalue(code.slice(0, op));
  }
  for (const m of code.matchAll(/(\+\+|--)\s*(?=[A-Za-z_*(])/g)) {
    const m2 = /^(\*\s*)?([A-Za-z_]\w*)(?!\s*(?:->|\.|\[))/.exec(code.slice(m.index! + m[0].length));
    if (m2 && !m2[1]) targets.push(m2[2]!); // ++x, --x
  }
  for (const m of code.matchAll(/(\+\+|--)/g)) lvalue(code.slice(0, m.index)); // x++, a[i]--
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
  const c = trace.language === 'c';
  const visible = Object.keys(locals).filter((n) => !holdsPointer(locals[n]!));
  const code = c ? cCode(lineText) : lineText.replace(/(['"]).*?\1/g, '""');
  const mentioned = new Set([...code.matchAll(IDENT)].map((m) => m[0]));
  const assigned = (c ? cAssignedNames(lineText) : assignedNames(lineText)).filter((n) => !locals[n] || visible.includes(n));
  const first = [...assigned, ...visible.filter((n) => mentioned.has(n))];
  const picked = [...new Set(first)].slice(0, MAX_STATE);
  const rest = seededRng(seed).shuffle(visible.filter((n) => !picked.includes(n)));
  picked.push(...rest.slice(0, Math.min(UNCHANGED, MAX_STATE - picked.length)));
  return [
    { kind: 'next_line', id: `next_line:${s.line}:1`, ...where, truth: { line: 0, text: '' } },
    ...picked.map((name): Question => ({ kind: 'state', id: `state:${s.line}:1:${name}`, ...where, var: name, truth: PENDING })),
  ];
}
