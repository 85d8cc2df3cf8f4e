// Random access over a Trace for the replay runtime: the call stack and the
// full locals of any frame at any step, without decoding the whole run up
// front. Locals are rebuilt from per-frame checkpoints plus at most
// CHECKPOINT_EVERY diffs, so a query costs the same at step 10 and 1,000,000.
import type { Trace, Value } from '../engine/trace/schema';
import type { RecordedFrame, ReplayTrace } from './replayRuntime';

const CHECKPOINT_EVERY = 32;

type Locals = Record<string, Value>;

class IndexedTrace implements ReplayTrace {
  /** Per step: the call event that started (or resumed) the frame's current activation, or -1. */
  private readonly activation: Int32Array;
  /** Per call event: the caller's latest event before the call, or -1 (untraced caller). */
  private readonly callerStep: Int32Array;
  /** Per frame: its events' step indices, in order. */
  private readonly frameEvents = new Map<number, Int32Array>();
  /** Per frame: full locals after every CHECKPOINT_EVERY-th event of the frame. */
  private readonly checkpoints = new Map<number, Locals[]>();
  private cached: { step: number; frame: number; locals: Locals } | undefined;

  constructor(readonly trace: Trace) {
    const steps = trace.steps;
    const n = steps.length;
    this.activation = new Int32Array(n).fill(-1);
    this.callerStep = new Int32Array(n).fill(-1);
    const lastEvent = new Map<number, number>();
    const currentActivation = new Map<number, number>();
    const events = new Map<number, number[]>();
    const live = new Map<number, Locals>();
    for (let i = 0; i < n; i++) {
      const s = steps[i]!;
      if (s.event === 'call') {
        this.activation[i] = i;
        currentActivation.set(s.frame, i);
        if (s.parent !== null && s.parent !== undefined) this.callerStep[i] = lastEvent.get(s.parent) ?? -1;
      } else {
        this.activation[i] = currentActivation.get(s.frame) ?? -1;
      }
      lastEvent.set(s.frame, i);

      let list = events.get(s.frame);
      if (!list) events.set(s.frame, (list = []));
      let locals = live.get(s.frame);
      if (!locals) live.set(s.frame, (locals = {}));
      applyDiff(locals, s.set, s.del);
      if (list.length % CHECKPOINT_EVERY === 0) {
        let cps = this.checkpoints.get(s.frame);
        if (!cps) this.checkpoints.set(s.frame, (cps = []));
        cps.push({ ...locals });
      }
      list.push(i);
      // A finished frame's live locals are no longer needed (checkpoints keep what queries need).
      if (s.event === 'return' && !s.yielded) live.delete(s.frame);
    }
    for (const [frame, list] of events) this.frameEvents.set(frame, Int32Array.from(list));
  }

  stackAt(i: number): readonly RecordedFrame[] {
    const steps = this.trace.steps;
    const stack: RecordedFrame[] = [];
    let j = i;
    // Bounded by the trace length so a malformed parent chain cannot loop forever.
    for (let guard = 0; j >= 0 && guard < steps.length; guard++) {
      const s = steps[j]!;
      stack.push({ frame: s.frame, fn: s.fn, file: s.file, line: s.line });
      const call = this.activation[j]!;
      if (call < 0) break;
      j = this.callerStep[call]!;
    }
    return stack;
  }

  localsAt(i: number, frame: number): Readonly<Locals> {
    const c = this.cached;
    if (c && c.step === i && c.frame === frame) return c.locals;
    const events = this.frameEvents.get(frame);
    const cps = this.checkpoints.get(frame);
    if (!events || !cps) return {};
    // The frame's latest event at or before step i.
    let lo = 0;
    let hi = events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (events[mid]! <= i) lo = mid + 1;
      else hi = mid;
    }
    const p = lo - 1;
    if (p < 0) return {};
    const base = Math.floor(p / CHECKPOINT_EVERY);
    const locals: Locals = { ...cps[base]! };
    for (let k = base * CHECKPOINT_EVERY + 1; k <= p; k++) {
      const s = this.trace.steps[events[k]!]!;
      applyDiff(locals, s.set, s.del);
    }
    this.cached = { step: i, frame, locals };
    return locals;
  }
}

function applyDiff(locals: Locals, set: Record<string, Value> | undefined, del: string[] | undefined): void {
  if (set) for (const name in set) locals[name] = set[name]!;
  if (del) for (const name of del) delete locals[name];
}

/** Indexes a trace for replay. */
export function toReplayTrace(trace: Trace): ReplayTrace {
  return new IndexedTrace(trace);
}
