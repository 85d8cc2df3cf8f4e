// Parity between two recordings of the same run — the in-process tracer's
// and a DAP tracer's: the executed-line sequence, and every value both
// represent exactly. The test over the fixture programs and `npm run
// bench:dap` (which prints the table in docs/trace-format.md) use it.
import { decodeTrace } from '../trace/decode';
import type { Trace, Value } from '../trace/schema';

export interface Parity {
  /** `line` events in each trace. */
  lines: [number, number];
  /** The sequences of (function, line) of the `line` events are equal. */
  linesEqual: boolean;
  /** Values compared (locals at every line event, return values, the outcome) and how many differed. */
  values: number;
  differ: number;
  /** Values one side could not read exactly (marked truncated there): not compared. */
  unread: number;
  /** The first few differences, for the message of a failing test. */
  examples: string[];
}

const same = (a: Value, b: Value) => a.repr === b.repr && a.type === b.type && a.literal === b.literal && a.truncated === b.truncated;

export function compareTraces(reference: Trace, other: Trace): Parity {
  const r = decodeTrace(reference);
  const o = decodeTrace(other);
  const lineSteps = (t: Trace) => t.steps.filter((s) => s.event === 'line');
  const rl = lineSteps(reference);
  const ol = lineSteps(other);
  const p: Parity = { lines: [rl.length, ol.length], linesEqual: rl.length === ol.length, values: 0, differ: 0, unread: 0, examples: [] };
  for (let k = 0; k < Math.min(rl.length, ol.length); k++) {
    const a = rl[k]!;
    const b = ol[k]!;
    if (a.fn !== b.fn || a.line !== b.line) {
      p.linesEqual = false;
      p.examples.push(`line event ${k}: ${a.fn}:${a.line} vs ${b.fn}:${b.line}`);
      break;
    }
    const la = r.locals(a.i);
    const lb = o.locals(b.i);
    for (const name of new Set([...Object.keys(la), ...Object.keys(lb)])) {
      tally(p, `${a.fn}:${a.line} (line event ${k}) ${name}`, la[name], lb[name]);
    }
  }
  const returns = (t: Trace) => t.steps.filter((s) => s.event === 'return');
  const rr = returns(reference);
  const or = returns(other);
  for (let k = 0; k < Math.min(rr.length, or.length); k++) tally(p, `return ${k} of ${rr[k]!.fn}`, rr[k]!.value, or[k]!.value, true);
  if (rr.length !== or.length) p.examples.push(`returns: ${rr.length} vs ${or.length}`);
  const ro = reference.outcome;
  const oo = other.outcome;
  if (ro.kind !== oo.kind) tally(p, 'outcome', undefined, { repr: oo.kind, type: 'outcome', literal: false });
  else if (ro.kind === 'returned' && oo.kind === 'returned') tally(p, 'outcome', ro.value, oo.value);
  else if (ro.kind === 'raised' && oo.kind === 'raised') {
    const describe = (x: typeof ro) => ({ repr: `${x.type}: ${x.message} @${x.line}`, type: 'exception', literal: false });
    tally(p, 'outcome', describe(ro), describe(oo));
  }
  return p;
}

function tally(p: Parity, where: string, a: Value | undefined, b: Value | undefined, optional = false): void {
  if (optional && a === undefined && b === undefined) return; // both unwinding
  // One side could not read it exactly (marked so): never compared.
  if (a && b && Boolean(a.truncated) !== Boolean(b.truncated)) {
    p.unread++;
    return;
  }
  p.values++;
  if (a && b && same(a, b)) return;
  p.differ++;
  if (p.examples.length < 5) p.examples.push(`${where}: ${a ? a.repr : '(none)'} vs ${b ? b.repr : '(none)'}`);
}
