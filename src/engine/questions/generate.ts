// White-box question generation from a recorded run (SEMANTICS §2–3): what to
// ask about one function call, with ground truth taken from the trace facts.
// Selection asks what is informative — branch and loop lines, non-sequential
// transitions, variables that change, a few that do not — within per-program
// caps and with a seeded RNG, and never asks a question whose truth is inexact.
import { decodeTrace, type DecodedTrace, type FrameInfo, type Locals } from '../trace/decode';
import { traceFacts, type TraceFacts } from '../trace/facts';
import type { Trace, Value } from '../trace/schema';
import { seededRng, type Rng } from './rng';
import type { Question } from './schema';
import { holdsPointer } from '../dap/lldb-values';

export interface QuestionOptions {
  /** Seed of the selection; the same (trace, options) always gives the same questions. */
  seed?: number;
  /** Caps per program (ExecVerify: 5 next-line + 5 state). */
  maxNextLine?: number;
  maxState?: number;
  maxStateAny?: number;
  maxCoverage?: number;
  /** Ask the output question (`assert f(args) == ??`). Default true. */
  output?: boolean;
  /** Ask the input question (`assert f(??) == out`). Default false. */
  input?: boolean;
  /**
   * Next-line answers are matched by source text (ExecVerify): skip questions
   * whose answer line has the same text as another line of the function.
   * Default true. With false, answers are line numbers and nothing is skipped.
   */
  textMatchedNextLine?: boolean;
  /**
   * Most state questions about a variable the line leaves unchanged, as a share
   * of the state questions asked (default 0.2): with 5 questions at most one,
   * with fewer than 5 none. Never filled up past the share when the line's
   * changes run short (that was 45–76% on real projects).
   */
  unchangedShare?: number;
  /** At most this many state questions whose answer is Nil (a line that never runs). Default 1. */
  maxNil?: number;
  /** The frame to ask about; default the entry call's frame. */
  frame?: number;
  /**
   * Asked only when this says the question's truth holds in the call's other
   * runs (another hash seed, a second run): `confirmIn(traces)` of confirm.ts.
   */
  confirm?: (q: Question) => boolean;
}

const HEADER_RE = /^(?:async\s+)?(?:if|elif|else|for|while|try|except|finally|with|match|case)\b/;
const ASSIGN_RE = /^([A-Za-z_]\w*)\s*(?:=(?!=)|\+=|-=|\*=|\/=|\/\/=|%=|\|=|&=|\^=|\*\*=|<<=|>>=)/;
const UNINFORMATIVE_TYPES = new Set(['function', 'module', 'type', 'builtin_function_or_method', 'method', 'generator']);

export function normalizeLineText(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

/**
 * The entry call's frame: the first traced function frame at the smallest
 * depth, preferring one of the function `fn` (the sample's function, or its
 * last dotted part: `Stack.push` → `push`), so a method sample
 * `Stack([1]).push(2)` is asked about `push`, not `__init__`.
 */
export function entryFrame(decoded: DecodedTrace, fn?: string): FrameInfo | undefined {
  const want = fn?.split('.').pop();
  let best: FrameInfo | undefined;
  let bestDepth = Infinity;
  let named: FrameInfo | undefined;
  let namedDepth = Infinity;
  for (const f of decoded.frames) {
    if (f.fn === '<module>') continue;
    const first = decoded.steps[f.steps[0]!]!;
    if (first.depth < bestDepth) {
      best = f;
      bestDepth = first.depth;
    }
    if (want !== undefined && f.fn === want && first.depth < namedDepth) {
      named = f;
      namedDepth = first.depth;
    }
  }
  return named ?? best ?? decoded.frames[0];
}

/**
 * The function a trace's entry calls: `f` for `f(1)` and `list(f(1))` (a
 * generator drained), `push` for `Stack([1]).push(2)`, `f` for `mod:f`.
 * Undefined for a script.
 */
export function entryFunction(trace: Pick<Trace, 'entry'>): string | undefined {
  const entry = trace.entry;
  if (entry.kind === 'function') return entry.target.split(':').pop()?.split('.').pop();
  if (entry.kind !== 'call') return undefined;
  let expr = entry.expr.trim();
  const drained = /^list\((.*)\)$/s.exec(expr);
  if (drained) expr = drained[1]!.trim();
  // The last name at bracket depth 0 that is called: strings and arguments skipped.
  let depth = 0;
  let quote: string | null = null;
  let last: string | undefined;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (depth === 0 && /[A-Za-z_]/.test(c) && (i === 0 || !/[\w]/.test(expr[i - 1]!))) {
      const name = /^[A-Za-z_]\w*/.exec(expr.slice(i))![0];
      if (expr[i + name.length] === '(') last = name;
      i += name.length - 1;
    }
  }
  return last;
}

/** Line numbers of a C function: from its name's line to the `}` that closes its body (braces in strings and comments are not told apart). */
export function cFunctionLines(source: string, defLine: number): number[] {
  const lines = source.split('\n');
  const out: number[] = [];
  let depth = 0;
  let opened = false;
  for (let n = defLine; n <= lines.length; n++) {
    out.push(n);
    for (const c of lines[n - 1]!) {
      if (c === '{') {
        depth++;
        opened = true;
      } else if (c === '}') depth--;
    }
    if (opened && depth <= 0) return out;
  }
  return out;
}

/** Line numbers of a function's body: the `def` line's indented block (blank lines included). */
export function functionLines(source: string, defLine: number): number[] {
  const lines = source.split('\n');
  const indentOf = (s: string) => s.length - s.trimStart().length;
  // Decorators: the frame's first line may be a decorator; find the `def`.
  let start = defLine;
  while (start <= lines.length && !/^\s*(async\s+)?def\b/.test(lines[start - 1] ?? '')) start++;
  if (start > lines.length) return [];
  const base = indentOf(lines[start - 1]!);
  const out = [start];
  let depth = bracketDelta(lines[start - 1]!);
  for (let n = start + 1; n <= lines.length; n++) {
    const s = lines[n - 1]!;
    if (depth <= 0 && s.trim() !== '' && !s.trim().startsWith('#') && indentOf(s) <= base) break;
    out.push(n);
    depth = Math.max(0, depth + bracketDelta(s));
  }
  while (out.length > 1 && (lines[out[out.length - 1]! - 1] ?? '').trim() === '') out.pop();
  return out;
}

function bracketDelta(line: string): number {
  let d = 0;
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '#') break;
    else if (c === '"' || c === "'") quote = c;
    else if ('([{'.includes(c)) d++;
    else if (')]}'.includes(c)) d--;
  }
  return d;
}

const exact = (v: Value | undefined): v is Value => v !== undefined && !v.truncated;
/** A default object repr (`<x.C object at 0x…>`, recorded as `at <addr>`): its only content is the type. */
const ADDRESS_RE = / at (?:0x[0-9a-fA-F]+|<addr>)>/;
/**
 * A class, whatever its metaclass: `type`, `abc.ABCMeta` (Fraction),
 * `enum.EnumType` / `EnumMeta` (an Enum class), a user metaclass. Its repr is
 * `<class '…'>` (`<enum '…'>` for an Enum class) unless the metaclass
 * overrides it, and a metaclass's type name says Meta or Type.
 */
export function isClassValue(v: Value): boolean {
  return /^<(?:class|enum) '[^']*'>$/.test(v.repr) || /(?:^|\.)(?:type|\w*Meta(?:class)?|EnumType)$/.test(v.type);
}
/**
 * Worth asking about: exact, not a function/module/class, not an address-only
 * repr, not a C pointer nor a C value holding one (its text holds an address), and of a type the `value; type` answer can name (the
 * judge reads one word: C's `unsigned int` cannot be answered, so it is not asked).
 */
export const askable = (v: Value | undefined): v is Value =>
  exact(v) && !UNINFORMATIVE_TYPES.has(v.type) && !isClassValue(v) && !ADDRESS_RE.test(v.repr) && !holdsPointer(v) && !/\s/.test(v.type);
const sameValue = (a: Value, b: Value) => a.repr === b.repr && a.type === b.type;

export interface Run {
  step: number;
  line: number;
  k: number;
  /** F's next event after the line event (state after L), if any. */
  after: number | undefined;
  /** Next line in F, -1 at the end, undefined when unknown (limit). */
  next: number | undefined;
}

/**
 * The facts of one frame in one pass: every line run with its state-after and
 * next line. Linear in the frame: the next line of every run comes from one
 * backward sweep (the rule of TraceFacts.nextLineAfter, which looks a run up by
 * scanning the frame and would make this quadratic).
 */
function frameRuns(decoded: DecodedTrace, facts: TraceFacts, frame: FrameInfo): Run[] {
  const steps = frame.steps;
  const n = steps.length;
  // What "the next line after position p" is, for every p, from the back.
  const nextAt = new Array<number | undefined>(n);
  const last = n > 0 ? decoded.steps[steps[n - 1]!]! : undefined;
  // No further event of F: a suspended generator never resumed (-1), or a limit (unknown).
  let answer: number | undefined = last && last.event === 'return' && last.yielded ? -1 : facts.endsEarly() ? undefined : -1;
  for (let p = n - 1; p >= 0; p--) {
    nextAt[p] = answer;
    const s = decoded.steps[steps[p]!]!;
    if (s.event === 'line') answer = s.line;
    else if (s.event === 'return' && !s.yielded) answer = -1;
  }
  const counts = new Map<number, number>();
  const runs: Run[] = [];
  for (let p = 0; p < n; p++) {
    const s = decoded.steps[steps[p]!]!;
    if (s.event !== 'line') continue;
    const k = (counts.get(s.line) ?? 0) + 1;
    counts.set(s.line, k);
    runs.push({ step: steps[p]!, line: s.line, k, after: steps[p + 1], next: nextAt[p] });
  }
  return runs;
}

/** Lines of `file` that ran in any frame: coverage and Nil are about the run, not one frame (nested functions, recursion). */
function linesRun(decoded: DecodedTrace, file: number): Set<number> {
  const out = new Set<number>();
  for (const s of decoded.steps) if (s.event === 'line' && s.file === file) out.add(s.line);
  return out;
}

/** Everything question builders share about one frame. */
export interface FrameContext {
  trace: Trace;
  decoded: DecodedTrace;
  facts: TraceFacts;
  frame: FrameInfo;
  source: string[];
  body: number[];
  /** Normalised text of each body line → how many body lines have it. */
  textCount: Map<string, number>;
  runs: Run[];
  /** Lines of the frame's file that ran in any frame of the run. */
  covered: Set<number>;
  /** The function's source by line number (REval's text → line map), shared by every next-line question. */
  lineMap: Record<string, string>;
}

export function frameContext(trace: Trace, frameId?: number, decoded: DecodedTrace = decodeTrace(trace)): FrameContext | undefined {
  const frame = frameId !== undefined ? decoded.frame(frameId) : entryFrame(decoded, entryFunction(trace));
  if (!frame) return undefined;
  const facts = traceFacts(decoded);
  const file = trace.files[frame.file];
  const source = (file?.source ?? '').split('\n');
  const defLine = decoded.steps[frame.steps[0]!]!.line;
  const body = trace.language === 'c' ? cFunctionLines(file?.source ?? '', defLine) : functionLines(file?.source ?? '', defLine);
  const textCount = new Map<string, number>();
  for (const n of body) {
    const t = normalizeLineText(source[n - 1] ?? '');
    if (t) textCount.set(t, (textCount.get(t) ?? 0) + 1);
  }
  const ctx: FrameContext = {
    trace,
    decoded,
    facts,
    frame,
    source,
    body,
    textCount,
    runs: frameRuns(decoded, facts, frame),
    covered: linesRun(decoded, frame.file),
    lineMap: {},
  };
  ctx.lineMap = bodyLineMap(ctx);
  return ctx;
}

export function lineText(ctx: FrameContext, line: number): string {
  return (ctx.source[line - 1] ?? '').trim();
}

/** The function's source by line number, for mapping text answers to lines (REval). */
function bodyLineMap(ctx: FrameContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of ctx.body) {
    const t = lineText(ctx, n);
    if (t && !t.startsWith('#')) out[String(n)] = t;
  }
  return out;
}

export function nextLineQuestion(ctx: FrameContext, run: Run, textMatched: boolean): Question | undefined {
  if (run.next === undefined) return undefined; // cut by a limit: unknown
  const text = run.next === -1 ? '' : lineText(ctx, run.next);
  if (textMatched && run.next !== -1 && (ctx.textCount.get(normalizeLineText(text)) ?? 0) !== 1) return undefined;
  return {
    kind: 'next_line',
    id: `next_line:${run.line}:${run.k}`,
    fn: ctx.frame.fn,
    frame: ctx.frame.id,
    line: run.line,
    lineText: lineText(ctx, run.line),
    k: run.k,
    truth: { line: run.next, text, lines: ctx.lineMap },
  };
}

export function stateQuestion(ctx: FrameContext, run: Run, name: string): Question | undefined {
  if (run.after === undefined) return undefined;
  const v = ctx.decoded.locals(run.after)[name];
  if (!askable(v)) return undefined;
  return {
    kind: 'state',
    id: `state:${run.line}:${run.k}:${name}`,
    fn: ctx.frame.fn,
    frame: ctx.frame.id,
    line: run.line,
    lineText: lineText(ctx, run.line),
    k: run.k,
    var: name,
    truth: { repr: v.repr, type: v.type, literal: v.literal },
  };
}

interface StateCandidate {
  run: Run;
  name: string;
  changed: boolean;
  group: string;
}

function stateCandidates(ctx: FrameContext): StateCandidate[] {
  const out: StateCandidate[] = [];
  for (const run of ctx.runs) {
    if (run.after === undefined) continue;
    const before: Locals = ctx.decoded.locals(run.step);
    const after: Locals = ctx.decoded.locals(run.after);
    for (const name of Object.keys(after)) {
      const v = after[name]!;
      if (!askable(v)) continue;
      const b = before[name];
      const changed = b === undefined || !sameValue(b, v);
      out.push({ run, name, changed, group: `${name}=${v.type}:${v.repr}` });
    }
  }
  return out;
}

/** Pick up to n items, preferring ones whose group was not taken yet (variety over repetition). */
function pickVaried<T>(rng: Rng, items: readonly T[], n: number, groupOf: (t: T) => string): T[] {
  const shuffled = rng.shuffle(items);
  const taken: T[] = [];
  const seen = new Set<string>();
  for (const pass of [0, 1]) {
    for (const it of shuffled) {
      if (taken.length >= n) return taken;
      const g = groupOf(it);
      if (taken.includes(it) || (pass === 0 && seen.has(g))) continue;
      seen.add(g);
      taken.push(it);
    }
  }
  return taken;
}

/**
 * State questions whose answer is Nil: an assignment line of the function that
 * never ran in any frame (a line of a nested function or of a recursive call
 * that ran elsewhere is not Nil).
 */
export function nilQuestions(ctx: FrameContext): Question[] {
  const out: Question[] = [];
  for (const n of ctx.body.slice(1)) {
    if (ctx.covered.has(n)) continue;
    const text = lineText(ctx, n);
    const m = ASSIGN_RE.exec(text);
    if (!m) continue;
    out.push({
      kind: 'state',
      id: `state:${n}:1:${m[1]!}`,
      fn: ctx.frame.fn,
      frame: ctx.frame.id,
      line: n,
      lineText: text,
      k: 1,
      var: m[1]!,
      truth: { nil: true },
    });
  }
  return out;
}

export function stateAnyQuestions(ctx: FrameContext): Question[] {
  const byKey = new Map<string, { line: number; name: string; values: Value[]; seen: Set<string>; changed: boolean; exactAll: boolean }>();
  for (const run of ctx.runs) {
    if (run.after === undefined) continue;
    const before = ctx.decoded.locals(run.step);
    const after = ctx.decoded.locals(run.after);
    for (const [name, v] of Object.entries(after)) {
      const key = `${run.line}:${name}`;
      let e = byKey.get(key);
      if (!e) byKey.set(key, (e = { line: run.line, name, values: [], seen: new Set(), changed: false, exactAll: true }));
      // One inexact value makes the whole set inexact: the answer might be that one.
      if (!askable(v)) e.exactAll = false;
      else {
        // A set of seen values, not a scan of them: a loop counter has as many values as runs.
        const id = `${v.type}\u0000${v.repr}`;
        if (!e.seen.has(id)) {
          e.seen.add(id);
          e.values.push(v);
        }
      }
      const b = before[name];
      e.changed ||= b === undefined || !sameValue(b, v);
    }
  }
  return [...byKey.values()]
    .filter((e) => e.changed && e.exactAll)
    .map((e) => ({
      kind: 'state_any' as const,
      id: `state_any:${e.line}:${e.name}`,
      fn: ctx.frame.fn,
      frame: ctx.frame.id,
      line: e.line,
      lineText: lineText(ctx, e.line),
      var: e.name,
      truth: { values: e.values.map((v) => ({ repr: v.repr, type: v.type, literal: v.literal })) },
    }));
}

const STATEMENT_RE =
  /^(?:return|raise|yield|break|continue|pass|del|assert|global|nonlocal|print|if|elif|for|while|with|[A-Za-z_][\w.]*\s*(?:=|\+=|-=|\*=|\/=|\(|\[))/;

/** Coverage of the function's lines in the whole run: a line of a nested function or a recursive call that ran counts. */
export function coverageQuestions(ctx: FrameContext): Question[] {
  const out: Question[] = [];
  let open = 0;
  for (const n of ctx.body.slice(1)) {
    const raw = ctx.source[n - 1] ?? '';
    const text = raw.trim();
    const inside = open > 0;
    open = Math.max(0, open + bracketDelta(raw));
    // Only lines that start a simple statement: whether `else:` / `try:` or a
    // continuation line gets a line event depends on the interpreter version.
    if (inside || !text || !STATEMENT_RE.test(text) || /^(else|try|finally)\s*:/.test(text)) continue;
    out.push({
      kind: 'coverage',
      id: `coverage:${n}`,
      fn: ctx.frame.fn,
      frame: ctx.frame.id,
      line: n,
      lineText: text,
      truth: { covered: ctx.covered.has(n) },
    });
  }
  return out;
}

/** The callee of an entry call such as `f([1, 2], 3)` → `f`. */
export function calleeOf(call: string): string | undefined {
  return /^\s*([A-Za-z_][\w.]*)\s*\(/.exec(call)?.[1];
}

export function outputQuestion(trace: Trace): Question | undefined {
  if (trace.entry.kind !== 'call' || trace.outcome.kind !== 'returned') return undefined;
  const v = trace.outcome.value;
  if (!askable(v)) return undefined;
  return { kind: 'output', id: 'output', call: trace.entry.expr.trim(), truth: { value: { repr: v.repr, type: v.type, literal: v.literal } } };
}

export function inputQuestion(trace: Trace): Question | undefined {
  if (trace.entry.kind !== 'call' || trace.outcome.kind !== 'returned') return undefined;
  const v = trace.outcome.value;
  const fn = calleeOf(trace.entry.expr);
  // The prompt shows `assert f(??) == <repr>`: the repr must be exact Python source.
  if (!exact(v) || !v.literal || !fn || fn.includes('.')) return undefined;
  return {
    kind: 'input',
    id: 'input',
    call: trace.entry.expr.trim(),
    outputRepr: v.repr,
    truth: { code: trace.files[0]!.source, fn, output: { repr: v.repr, type: v.type, literal: v.literal } },
  };
}

/**
 * The question set for one run: output (and/or input) first, then next-line,
 * then state questions (then state_any and coverage when asked for), each
 * group in execution order.
 */
export function generateQuestions(trace: Trace, options: QuestionOptions = {}): Question[] {
  const rng = seededRng(options.seed ?? 0);
  const out: Question[] = [];
  const confirmed = options.confirm;
  const stable = (q: Question | undefined): q is Question => q !== undefined && (!confirmed || confirmed(q));
  if (options.output ?? true) {
    const q = outputQuestion(trace);
    if (stable(q)) out.push(q);
  }
  if (options.input) {
    const q = inputQuestion(trace);
    if (stable(q)) out.push(q);
  }
  const ctx = frameContext(trace, options.frame);
  if (!ctx) return out;
  const textMatched = options.textMatchedNextLine ?? true;

  // Next line: informative runs first (headers, jumps, the end), one per (line, next) where possible.
  const maxNext = options.maxNextLine ?? 5;
  const nextCands = ctx.runs.map((run) => ({ run, q: nextLineQuestion(ctx, run, textMatched) })).filter((c): c is { run: Run; q: Question } => stable(c.q));
  const informative = (c: { run: Run }) => HEADER_RE.test(lineText(ctx, c.run.line)) || c.run.next === -1 || c.run.next !== c.run.line + 1;
  const group = (c: { run: Run }) => `${c.run.line}->${c.run.next}`;
  const pickedNext = pickVaried(rng, nextCands.filter(informative), maxNext, group);
  if (pickedNext.length < maxNext) {
    pickedNext.push(
      ...pickVaried(
        rng,
        nextCands.filter((c) => !informative(c)),
        maxNext - pickedNext.length,
        group,
      ),
    );
  }
  out.push(...pickedNext.sort((a, b) => a.run.step - b.run.step).map((c) => c.q));

  // State: mostly variables that change, at most `unchangedShare` of them
  // about one that does not, at most maxNil Nil questions.
  const maxState = options.maxState ?? 5;
  if (maxState > 0) {
    const all = stateCandidates(ctx);
    const cands = confirmed ? all.filter((c) => stable(stateQuestion(ctx, c.run, c.name))) : all;
    const changed = cands.filter((c) => c.changed);
    const unchanged = cands.filter((c) => !c.changed);
    const nils = rng.shuffle(nilQuestions(ctx).filter(stable)).slice(0, maxState >= 3 ? (options.maxNil ?? 1) : 0);
    const share = Math.min(1, Math.max(0, options.unchangedShare ?? 0.2));
    // Room for round(share · maxState) unchanged ones (one of 5), the rest for changes.
    const want = Math.min(unchanged.length, Math.round(maxState * share));
    let nChanged = Math.min(changed.length, maxState - nils.length - want);
    // Never past the share when the changes run short: u ≤ share·(u + rest) ⇔ u ≤ share·rest / (1 − share).
    const cap = (rest: number) => (share >= 1 ? Infinity : Math.floor((share * rest) / (1 - share) + 1e-9));
    const nUnchanged = Math.min(want, cap(nChanged + nils.length));
    nChanged = Math.min(changed.length, maxState - nils.length - nUnchanged);
    const picked = [...pickVaried(rng, changed, nChanged, (c) => c.group), ...pickVaried(rng, unchanged, nUnchanged, (c) => c.group)].sort(
      (a, b) => a.run.step - b.run.step || a.name.localeCompare(b.name),
    );
    for (const c of picked) {
      const q = stateQuestion(ctx, c.run, c.name);
      if (q) out.push(q);
    }
    out.push(...nils);
  }

  const maxAny = options.maxStateAny ?? 0;
  if (maxAny > 0) out.push(...rng.shuffle(stateAnyQuestions(ctx).filter(stable)).slice(0, maxAny).sort(byLine));
  const maxCov = options.maxCoverage ?? 0;
  if (maxCov > 0) {
    const cov = coverageQuestions(ctx).filter(stable);
    // Both answers represented when both exist.
    const yes = rng.shuffle(cov.filter((q) => q.kind === 'coverage' && q.truth.covered));
    const no = rng.shuffle(cov.filter((q) => q.kind === 'coverage' && !q.truth.covered));
    const picked: Question[] = [];
    while (picked.length < maxCov && (yes.length || no.length)) {
      const from = (picked.length % 2 === 0 ? no : yes).length ? (picked.length % 2 === 0 ? no : yes) : yes.length ? yes : no;
      picked.push(from.shift()!);
    }
    out.push(...picked.sort(byLine));
  }
  return out;
}

function byLine(a: Question, b: Question): number {
  return ('line' in a ? a.line : 0) - ('line' in b ? b.line : 0);
}
