// The runtime's view of a trace, over the engine's decoder: the call stack
// (innermost first) and the full locals of any frame at any step.
import { decodeTrace, type DecodedTrace } from '../engine/trace/decode';
import type { Trace, Value } from '../engine/trace/schema';
import type { RecordedFrame, ReplayTrace } from './replay-runtime';

class DecodedReplayTrace implements ReplayTrace {
  private cached: { step: number; locals: Readonly<Record<string, Value>> } | undefined;

  constructor(private readonly decoded: DecodedTrace) {}

  get trace(): Trace {
    return this.decoded.trace;
  }

  stackAt(i: number): readonly RecordedFrame[] {
    return this.decoded.stack(i).reverse();
  }

  localsAt(i: number, frame: number): Readonly<Record<string, Value>> {
    const steps = this.decoded.frame(frame)?.steps;
    if (!steps) return {};
    // The frame's latest event at or before step i holds its state at i.
    let lo = 0;
    let hi = steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (steps[mid]! <= i) lo = mid + 1;
      else hi = mid;
    }
    const j = steps[lo - 1];
    if (j === undefined) return {};
    // Variables, scopes and evaluate ask for the same step many times in a row.
    if (this.cached?.step === j) return this.cached.locals;
    const locals = this.decoded.locals(j);
    this.cached = { step: j, locals };
    return locals;
  }
}

/** Indexes a trace for replay (one linear pass; then random access). */
export function toReplayTrace(trace: Trace): ReplayTrace {
  return new DecodedReplayTrace(decodeTrace(trace));
}
