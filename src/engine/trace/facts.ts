// The derived facts of SEMANTICS.md §2, computed from a decoded trace: what
// questions are built from and what answers are judged against.
//
// Counting rule: every k is per *frame instance* F (one call of a function,
// including all resumptions of a generator frame), not per function. "L ran for
// the k-th time" means the k-th `line` event for line L in F (k = 1, 2, …).
// Address a frame by id (FrameInfo.id), or by "the n-th call of function f"
// with `facts.frameOfCall('f', n)` (n = 1 is the first call).
import type { DecodedTrace, FrameInfo, Locals } from './decode';
import type { Outcome, Step, Trace } from './schema';

/** The k-th run of line L in frame F, as a step index, or undefined. */
export interface LineRun {
  /** Step index of the `line` event. */
  step: number;
  frame: number;
  line: number;
  k: number;
}

export interface StateAfter {
  /** The event that shows the state: F's next line / return / exception event. */
  step: number;
  event: Step['event'];
  locals: Locals;
}

export interface NextLineInto {
  /** -1 when no traced line runs after it (the run ended). */
  line: number;
  frame: number | null;
  fn: string | null;
  step: number | null;
}

export class TraceFacts {
  constructor(readonly decoded: DecodedTrace) {}

  /** The frame of the n-th (1-based) call of function `fn` (qualified name: 'f', 'C.m', 'f.<locals>.g'). */
  frameOfCall(fn: string, occurrence = 1): FrameInfo | undefined {
    return this.decoded.frameOfCall(fn, occurrence);
  }

  /** Every run of line L in frame F, in order (runs[k-1] is the k-th run). */
  lineRuns(frame: number, line: number): LineRun[] {
    const info = this.decoded.frame(frame);
    if (!info) return [];
    const out: LineRun[] = [];
    for (const i of info.steps) {
      const s = this.decoded.steps[i]!;
      if (s.event === 'line' && s.line === line) out.push({ step: i, frame, line, k: out.length + 1 });
    }
    return out;
  }

  /** The k-th run of line L in F, or undefined when L ran fewer than k times in F. */
  lineRun(frame: number, line: number, k: number): LineRun | undefined {
    if (!Number.isInteger(k) || k < 1) throw new RangeError(`k counts runs from 1, got ${k}`);
    return this.lineRuns(frame, line)[k - 1];
  }

  /**
   * State after L's k-th run in F: the locals at F's next event after that
   * `line` event (its next line, or its return / exception event). Callee
   * events in between do not count. Undefined when L did not run k times, or
   * the trace ended (a limit) before F had another event.
   */
  stateAfter(frame: number, line: number, k: number): StateAfter | undefined {
    const run = this.lineRun(frame, line, k);
    if (!run) return undefined;
    const next = this.nextEventOfFrame(run.step);
    if (next === undefined) return undefined;
    return { step: next, event: this.decoded.steps[next]!.event, locals: this.decoded.locals(next) };
  }

  /**
   * Next line after L's k-th run in F ("step over"): the line of F's next
   * `line` event; -1 when F returns or raises (finishes) first. A generator's
   * yield is not a finish: its next line after resuming counts; -1 if it is
   * never resumed. Exception events that F handles are skipped (the handler's
   * line is the next line). Undefined when L did not run k times or the trace
   * was cut by a limit before the answer was known.
   */
  nextLineAfter(frame: number, line: number, k: number): number | undefined {
    const run = this.lineRun(frame, line, k);
    if (!run) return undefined;
    const info = this.decoded.frame(frame)!;
    const pos = this.decoded.positionInFrame(run.step);
    for (let p = pos + 1; p < info.steps.length; p++) {
      const s = this.decoded.steps[info.steps[p]!]!;
      if (s.event === 'line') return s.line;
      if (s.event === 'return' && !s.yielded) return -1;
    }
    // No further event of F: it was a suspended generator never resumed (-1),
    // or the run was stopped by a limit (unknown).
    const last = this.decoded.steps[info.steps[info.steps.length - 1]!]!;
    if (last.event === 'return' && last.yielded) return -1;
    return this.endsEarly() ? undefined : -1;
  }

  /**
   * Next line after L's k-th run in F ("step into"): the next `line` event in
   * any traced frame (a callee's first line, or the caller's line after F
   * returns). line -1 when nothing traced runs after it.
   */
  nextLineInto(frame: number, line: number, k: number): NextLineInto | undefined {
    const run = this.lineRun(frame, line, k);
    if (!run) return undefined;
    const steps = this.decoded.steps;
    for (let i = run.step + 1; i < steps.length; i++) {
      const s = steps[i]!;
      if (s.event === 'line') return { line: s.line, frame: s.frame, fn: s.fn, step: i };
    }
    if (this.endsEarly()) return undefined;
    return { line: -1, frame: null, fn: null, step: null };
  }

  /** The run was cut short (a limit, a crash) or cannot be trusted: what came after is unknown. */
  endsEarly(): boolean {
    const k = this.trace.outcome.kind;
    return k === 'limit' || k === 'crashed' || k === 'tampered';
  }

  /** Whether line L (of file `file`, default the main file 0) ran at least once, in any frame. */
  coverage(line: number, file = 0): boolean {
    for (const s of this.decoded.steps) if (s.event === 'line' && s.line === line && s.file === file) return true;
    return false;
  }

  /** All lines of `file` that ran, ascending. */
  coveredLines(file = 0): number[] {
    const set = new Set<number>();
    for (const s of this.decoded.steps) if (s.event === 'line' && s.file === file) set.add(s.line);
    return [...set].sort((a, b) => a - b);
  }

  /** The entry's return value or exception (the run's outcome). */
  output(): Outcome {
    return output(this.trace);
  }

  private get trace(): Trace {
    return this.decoded.trace;
  }

  /** The step index of F's next event after step i (i must be an event of F). */
  private nextEventOfFrame(i: number): number | undefined {
    const s = this.decoded.steps[i]!;
    const info = this.decoded.frame(s.frame)!;
    const pos = this.decoded.positionInFrame(i);
    return info.steps[pos + 1];
  }
}

/** The entry call's return value (or exception / limit): the `output` fact. */
export function output(trace: Trace): Outcome {
  return trace.outcome;
}

export function traceFacts(decoded: DecodedTrace): TraceFacts {
  return new TraceFacts(decoded);
}
