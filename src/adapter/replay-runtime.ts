// The replay engine: a cursor that moves forward and backward over a recorded
// Trace (line granularity), with breakpoints, hit counts, exception stops and
// goto targets. It knows nothing of DAP or VS Code; the session translates.
import { EventEmitter } from 'node:events';
import type { Outcome, Trace, Value } from '../engine/trace/schema';
import { evaluateRecorded, isTruthy, type EvalResult } from './recorded-expression';

/** One frame on the recorded call stack. */
export interface RecordedFrame {
  /** The trace's frame id. */
  frame: number;
  fn: string;
  /** Index into Trace.files. */
  file: number;
  /** The line the frame is at, at this step. */
  line: number;
}

/**
 * What the runtime reads from a decoded trace: the call stack and full locals
 * at any step, with fast random access. Built from the engine's decoder.
 */
export interface ReplayTrace {
  readonly trace: Trace;
  /** Frames on the stack at step i, innermost first. */
  stackAt(i: number): readonly RecordedFrame[];
  /** Full locals of `frame` at step i (the frame's latest state at or before i). */
  localsAt(i: number, frame: number): Readonly<Record<string, Value>>;
}

export type StopReason = 'entry' | 'step' | 'breakpoint' | 'exception' | 'goto' | 'restart';

/** Why and where the runtime stopped (the adapter turns it into DAP's `stopped` event). */
export interface RuntimeStop {
  reason: StopReason;
  step: number;
  /** Shown by editors next to the reason. */
  description?: string;
  hitBreakpointIds?: number[];
}

export interface BreakpointSpec {
  line: number;
  condition?: string;
  hitCondition?: string;
}

export interface ResolvedBreakpoint {
  id: number;
  line: number;
  verified: boolean;
  message?: string;
}

export interface GotoTarget {
  /** The step index of this run of the line. */
  step: number;
  /** 1-based: the k-th run of the line in the whole recording. */
  run: number;
  runs: number;
}

export type ExceptionFilter = 'raised' | 'uncaught';

export interface ReplayRuntimeEvents {
  stopped: [RuntimeStop];
  /** The cursor moved past the end of the recording. */
  end: [Outcome];
  /** A message for the user (for example a breakpoint condition that cannot be evaluated). */
  output: [string];
}

const KIND = { call: 0, line: 1, return: 2, exception: 3 } as const;
const MAX_GOTO_TARGETS = 1000;

interface Breakpoint {
  id: number;
  file: number;
  line: number;
  /** Step indices of every run of the line (sorted), shared with the line index. */
  runs: Int32Array;
  condition?: string;
  hit?: (n: number) => boolean;
  /** Per run: 1 condition true, 2 false, 0 not evaluated yet. */
  conditionCache?: Uint8Array;
  /** counts[k]: runs 0..k where the condition held; valid for k < filled. */
  conditionPrefix?: { counts: Int32Array; filled: number };
  warned?: boolean;
}

/** Parses a hit condition: `N` / `==N` (exactly the N-th hit), `>N`, `>=N`, `<N`, `<=N`, `%N` (every N-th). */
export function parseHitCondition(text: string): ((n: number) => boolean) | undefined {
  const m = /^\s*(==|>=|<=|>|<|%)?\s*(\d+)\s*$/.exec(text);
  if (!m) return undefined;
  const k = Number(m[2]);
  switch (m[1]) {
    case '>':
      return (n) => n > k;
    case '>=':
      return (n) => n >= k;
    case '<':
      return (n) => n < k;
    case '<=':
      return (n) => n <= k;
    case '%':
      return (n) => k > 0 && n % k === 0;
    default:
      return (n) => n === k;
  }
}

/** First index in the sorted array whose value is > x (or >= x when `inclusive`). */
function upperBound(a: Int32Array, x: number, inclusive = false): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (inclusive ? a[mid]! < x : a[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class ReplayRuntime extends EventEmitter<ReplayRuntimeEvents> {
  readonly length: number;
  private readonly kind: Uint8Array;
  private readonly frame: Int32Array;
  private readonly depth: Int32Array;
  /** Step indices of line events, per `file * 2^21 + line` key. */
  private readonly lineRuns = new Map<number, Int32Array>();
  private readonly firstLineOfFrame = new Map<number, number>();
  private readonly raisedStops: Int32Array;
  private readonly uncaughtStop: number | undefined;
  private readonly firstStop: number;

  private cursor = 0;
  private breakpoints: Breakpoint[] = [];
  private nextBreakpointId = 1;
  private exceptionFilters = new Set<ExceptionFilter>(['uncaught']);

  constructor(readonly replay: ReplayTrace) {
    super();
    const steps = replay.trace.steps;
    const n = steps.length;
    this.length = n;
    this.kind = new Uint8Array(n);
    this.frame = new Int32Array(n);
    this.depth = new Int32Array(n);
    const runs = new Map<number, number[]>();
    const raised: number[] = [];
    for (let i = 0; i < n; i++) {
      const s = steps[i]!;
      const k = KIND[s.event];
      this.kind[i] = k;
      this.frame[i] = s.frame;
      this.depth[i] = s.depth;
      if (k === KIND.line) {
        const key = lineKey(s.file, s.line);
        let list = runs.get(key);
        if (!list) runs.set(key, (list = []));
        list.push(i);
        if (!this.firstLineOfFrame.has(s.frame)) this.firstLineOfFrame.set(s.frame, i);
      } else if (k === KIND.exception && !this.isPropagation(i)) {
        raised.push(i);
      }
    }
    for (const [key, list] of runs) this.lineRuns.set(key, Int32Array.from(list));
    this.raisedStops = Int32Array.from(raised);
    this.uncaughtStop = this.findUncaughtRaise();
    const firstLine = this.kind.indexOf(KIND.line);
    this.firstStop = firstLine >= 0 ? firstLine : 0;
  }

  get trace(): Trace {
    return this.replay.trace;
  }

  /** The current step index. */
  get position(): number {
    return this.cursor;
  }

  get outcome(): Outcome {
    return this.replay.trace.outcome;
  }

  // ------------------------------------------------------------ inspection

  stack(): readonly RecordedFrame[] {
    if (this.length === 0) return [];
    return this.replay.stackAt(this.cursor);
  }

  locals(frame: number): Readonly<Record<string, Value>> {
    return this.replay.localsAt(this.cursor, frame);
  }

  /** The `<module>` frame on the current stack, whose locals are the module's globals. */
  moduleFrame(): RecordedFrame | undefined {
    const stack = this.stack();
    const bottom = stack[stack.length - 1];
    return bottom && bottom.fn === '<module>' ? bottom : undefined;
  }

  /** Evaluates an expression against recorded values in `frame` (default: top frame) at the cursor. */
  evaluate(expression: string, frame?: number): EvalResult {
    return this.evaluateAt(this.cursor, expression, frame ?? this.stack()[0]?.frame);
  }

  /** The exception raised at the cursor, when the cursor is on an exception event. */
  exceptionHere(): { type: string; message: string; uncaught: boolean } | undefined {
    const step = this.replay.trace.steps[this.cursor];
    if (!step?.exc) return undefined;
    return { ...step.exc, uncaught: this.cursor === this.uncaughtStop };
  }

  // ------------------------------------------------------------ breakpoints

  /** Replaces the breakpoints of one file; each is verified iff its line ran in the recording. */
  setBreakpoints(file: number, specs: BreakpointSpec[]): ResolvedBreakpoint[] {
    this.breakpoints = this.breakpoints.filter((b) => b.file !== file);
    return specs.map((spec) => {
      const id = this.nextBreakpointId++;
      const runs = this.lineRuns.get(lineKey(file, spec.line)) ?? new Int32Array(0);
      const bp: Breakpoint = { id, file, line: spec.line, runs };
      const resolved: ResolvedBreakpoint = { id, line: spec.line, verified: runs.length > 0 };
      if (!runs.length) resolved.message = `line ${spec.line} never ran in this recording`;
      if (spec.condition?.trim()) {
        bp.condition = spec.condition;
        bp.conditionCache = new Uint8Array(runs.length);
      }
      if (spec.hitCondition?.trim()) {
        const hit = parseHitCondition(spec.hitCondition);
        if (hit) bp.hit = hit;
        else {
          resolved.verified = false;
          resolved.message = `hit count '${spec.hitCondition}' not understood: use N, ==N, >N, >=N, <N, <=N or %N`;
        }
      }
      if (resolved.verified) this.breakpoints.push(bp);
      return resolved;
    });
  }

  setExceptionFilters(filters: readonly string[]): void {
    this.exceptionFilters = new Set(filters.filter((f): f is ExceptionFilter => f === 'raised' || f === 'uncaught'));
  }

  /** One target per run of the line: "the k-th run of this line". Capped for very hot lines. */
  gotoTargets(file: number, line: number): { targets: GotoTarget[]; total: number } {
    const runs = this.lineRuns.get(lineKey(file, line)) ?? new Int32Array(0);
    const targets: GotoTarget[] = [];
    for (let k = 0; k < Math.min(runs.length, MAX_GOTO_TARGETS); k++) {
      targets.push({ step: runs[k]!, run: k + 1, runs: runs.length });
    }
    return { targets, total: runs.length };
  }

  /** Which run of its line the step at `i` is (1-based), when it is a line event. */
  runOfStep(i: number): { run: number; runs: number } | undefined {
    const s = this.replay.trace.steps[i];
    if (!s || s.event !== 'line') return undefined;
    const runs = this.lineRuns.get(lineKey(s.file, s.line))!;
    return { run: upperBound(runs, i, true) + 1, runs: runs.length };
  }

  // ------------------------------------------------------------ motion

  /** Starts the replay: stops on the first line, or runs to the first breakpoint / exception. */
  start(stopOnEntry: boolean): void {
    if (this.length === 0) {
      this.emit('end', this.outcome);
      return;
    }
    this.cursor = this.firstStop;
    if (stopOnEntry) {
      this.stop({ reason: 'entry', step: this.cursor });
      return;
    }
    const first = this.breakpointHitsAt(this.cursor);
    if (first.length) {
      this.stop({ reason: 'breakpoint', step: this.cursor, hitBreakpointIds: first });
      return;
    }
    this.continue(false);
  }

  continue(reverse: boolean): void {
    this.moveTo(reverse ? -1 : this.length, reverse, 'step');
  }

  /** Step over (`over`), into (`in`) or out of (`out`) the current frame; `reverse` steps back over. */
  step(kind: 'over' | 'in' | 'out', reverse = false): void {
    const cur = this.cursor;
    const f = this.frame[cur]!;
    const d = this.depth[cur]!;
    let target: number;
    if (kind === 'in') {
      target = this.scan(cur, reverse, (j) => this.kind[j] === KIND.line);
    } else if (kind === 'over') {
      target = this.scan(cur, reverse, (j) => this.kind[j] === KIND.line && (this.frame[j] === f || this.depth[j]! < d));
    } else {
      target = this.scan(cur, reverse, (j) => this.kind[j] === KIND.line && this.depth[j]! < d);
    }
    this.moveTo(target, reverse, 'step');
  }

  /** Moves the cursor to any step (used by goto and by the editor's "jump to step"). */
  jumpTo(step: number, reason: StopReason = 'goto'): boolean {
    if (!Number.isInteger(step) || step < 0 || step >= this.length) return false;
    this.cursor = step;
    const run = this.runOfStep(step);
    this.stop({ reason, step, description: run ? `run ${run.run} of ${run.runs} of this line` : undefined });
    return true;
  }

  /** Back to the first line of `frame` (the frame must be live at the cursor). */
  restartFrame(frame: number): boolean {
    const first = this.firstLineOfFrame.get(frame);
    if (first === undefined) return false;
    this.cursor = first;
    this.stop({ reason: 'restart', step: first });
    return true;
  }

  // ------------------------------------------------------------ internals

  private stop(stop: RuntimeStop): void {
    this.emit('stopped', stop);
  }

  /** Index of the next (or previous) step after `from` satisfying `pred`; length / -1 when none. */
  private scan(from: number, reverse: boolean, pred: (j: number) => boolean): number {
    if (reverse) {
      for (let j = from - 1; j >= 0; j--) if (pred(j)) return j;
      return -1;
    }
    for (let j = from + 1; j < this.length; j++) if (pred(j)) return j;
    return this.length;
  }

  /**
   * Moves toward `target` but stops earlier at a breakpoint hit or an exception
   * stop on the way; past either end of the recording it ends (forward) or
   * stops at the first line (backward).
   */
  private moveTo(target: number, reverse: boolean, reason: StopReason): void {
    const cur = this.cursor;
    let best = target;
    let bestReason: StopReason = reason;
    let bestIds: number[] | undefined;
    let description: string | undefined;
    const better = (j: number) => (reverse ? j > best : j < best);

    const exc = this.nextExceptionStop(cur, reverse);
    if (exc !== undefined && better(exc)) {
      best = exc;
      bestReason = 'exception';
      const e = this.replay.trace.steps[exc]!.exc;
      description = e ? `${e.type}: ${e.message}` : undefined;
    }
    for (const bp of this.breakpoints) {
      const j = this.nextBreakpointHit(bp, cur, reverse, best);
      if (j === undefined) continue;
      if (better(j)) {
        best = j;
        bestReason = 'breakpoint';
        bestIds = [bp.id];
        description = undefined;
      } else if (j === best && bestReason === 'breakpoint') {
        bestIds!.push(bp.id);
      }
    }

    if (best >= this.length) {
      this.cursor = this.length - 1;
      this.emit('end', this.outcome);
      return;
    }
    if (best < 0 || (reverse && best < this.firstStop)) {
      this.cursor = this.firstStop;
      this.stop({ reason: 'entry', step: this.cursor, description: 'start of the recording' });
      return;
    }
    this.cursor = best;
    this.stop({ reason: bestReason, step: best, ...(bestIds ? { hitBreakpointIds: bestIds } : {}), ...(description ? { description } : {}) });
  }

  private nextExceptionStop(cur: number, reverse: boolean): number | undefined {
    let found: number | undefined;
    const consider = (j: number | undefined) => {
      if (j === undefined) return;
      if (reverse ? j < cur && (found === undefined || j > found) : j > cur && (found === undefined || j < found)) found = j;
    };
    if (this.exceptionFilters.has('uncaught')) consider(this.uncaughtStop);
    if (this.exceptionFilters.has('raised')) {
      const k = upperBound(this.raisedStops, cur);
      consider(reverse ? this.raisedStops[upperBound(this.raisedStops, cur, true) - 1] : this.raisedStops[k]);
    }
    return found;
  }

  /** The next run (after / before `cur`, not beyond `limit`) at which `bp` triggers. */
  private nextBreakpointHit(bp: Breakpoint, cur: number, reverse: boolean, limit: number): number | undefined {
    const runs = bp.runs;
    let k = reverse ? upperBound(runs, cur, true) - 1 : upperBound(runs, cur);
    for (; reverse ? k >= 0 : k < runs.length; k += reverse ? -1 : 1) {
      const j = runs[k]!;
      if (reverse ? j < limit : j > limit) return undefined;
      if (this.triggers(bp, k)) return j;
    }
    return undefined;
  }

  /** Breakpoints that trigger exactly at step `i`. */
  private breakpointHitsAt(i: number): number[] {
    const ids: number[] = [];
    for (const bp of this.breakpoints) {
      const k = upperBound(bp.runs, i, true);
      if (bp.runs[k] === i && this.triggers(bp, k)) ids.push(bp.id);
    }
    return ids;
  }

  /**
   * Whether the k-th run (0-based) of a breakpoint's line triggers it. Hit
   * counts count the runs where the condition held, from the start of the
   * recording, so they do not depend on how the user moved around.
   */
  private triggers(bp: Breakpoint, k: number): boolean {
    if (bp.condition && !this.conditionHolds(bp, k)) return false;
    if (!bp.hit) return true;
    return bp.hit(bp.condition ? this.conditionHitsUpTo(bp, k) : k + 1);
  }

  /** How many of runs 0..k satisfied the condition (prefix counts, extended lazily). */
  private conditionHitsUpTo(bp: Breakpoint, k: number): number {
    const prefix = (bp.conditionPrefix ??= { counts: new Int32Array(bp.runs.length), filled: 0 });
    for (let m = prefix.filled; m <= k; m++) {
      prefix.counts[m] = (m > 0 ? prefix.counts[m - 1]! : 0) + (this.conditionHolds(bp, m) ? 1 : 0);
    }
    prefix.filled = Math.max(prefix.filled, k + 1);
    return prefix.counts[k]!;
  }

  private conditionHolds(bp: Breakpoint, k: number): boolean {
    const cache = bp.conditionCache!;
    if (cache[k] === 0) {
      const j = bp.runs[k]!;
      const result = this.evaluateAt(j, bp.condition!, this.frame[j]!);
      if (!result.ok && !bp.warned) {
        bp.warned = true;
        this.emit('output', `breakpoint condition '${bp.condition}' at line ${bp.line}: ${result.message} (treated as false)`);
      }
      cache[k] = result.ok && isTruthy(result.value) ? 1 : 2;
    }
    return cache[k] === 1;
  }

  private evaluateAt(i: number, expression: string, frame: number | undefined): EvalResult {
    if (frame === undefined) return { ok: false, message: 'no frame at this step' };
    const locals = this.replay.localsAt(i, frame);
    let globals: Readonly<Record<string, Value>> | null | undefined;
    // Names missing from the frame fall back to the module's globals (when the module body was traced).
    const moduleGlobals = () => {
      if (globals === undefined) {
        const stack = this.replay.stackAt(i);
        const bottom = stack[stack.length - 1];
        globals = bottom && bottom.fn === '<module>' && bottom.frame !== frame ? { ...this.replay.localsAt(i, bottom.frame) } : null;
      }
      return globals;
    };
    return evaluateRecorded(expression, (name) => {
      if (Object.prototype.hasOwnProperty.call(locals, name)) return locals[name];
      const g = moduleGlobals();
      return g && Object.prototype.hasOwnProperty.call(g, name) ? g[name] : undefined;
    });
  }

  /** An exception event that only re-reports an exception propagating out of a callee. */
  private isPropagation(i: number): boolean {
    if (i === 0) return false;
    const prev = this.replay.trace.steps[i - 1]!;
    const cur = this.replay.trace.steps[i]!;
    return (prev.event === 'return' || prev.event === 'exception') && prev.depth === cur.depth + 1;
  }

  /** Where the exception that ended the run was raised: the start of the final propagation chain. */
  private findUncaughtRaise(): number | undefined {
    const outcome = this.replay.trace.outcome;
    if (outcome.kind !== 'raised') return undefined;
    const steps = this.replay.trace.steps;
    let last = -1;
    for (let j = steps.length - 1; j >= 0; j--) {
      if (steps[j]!.event === 'exception') {
        last = j;
        break;
      }
      if (steps[j]!.event === 'line') break;
    }
    if (last < 0) return undefined;
    let j = last;
    while (j > 0 && this.isPropagation(j)) {
      // Walk back over the callee's return / exception events to its own exception event.
      let k = j - 1;
      while (k >= 0 && steps[k]!.event === 'return') k--;
      if (k < 0 || steps[k]!.event !== 'exception') break;
      j = k;
    }
    return j;
  }
}

function lineKey(file: number, line: number): number {
  return file * 2 ** 21 + line;
}
