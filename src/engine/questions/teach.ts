// Samples that teach nothing: a run of one or two lines, or a call whose
// result is one of its own arguments unchanged (an identity for this input).
// A harvest caps their share per project (SEMANTICS §3, issue 22 item 7).
import { decodeTrace, type DecodedTrace } from '../trace/decode';
import type { Trace } from '../trace/schema';
import { entryFrame, entryFunction } from './generate';

export type Triviality = 'few_lines' | 'identity';

/** At most this many distinct lines run (over every frame): nothing to simulate. */
export const TRIVIAL_MAX_LINES = 2;

/** Why a run teaches little, or undefined when it is worth a sample. */
export function triviality(trace: Trace, decoded: DecodedTrace = decodeTrace(trace)): Triviality | undefined {
  const lines = new Set<string>();
  for (const s of decoded.steps) if (s.event === 'line') lines.add(`${s.file}:${s.line}`);
  if (lines.size <= TRIVIAL_MAX_LINES) return 'few_lines';
  if (trace.outcome.kind !== 'returned') return undefined;
  const out = trace.outcome.value;
  const frame = entryFrame(decoded, entryFunction(trace));
  if (!frame) return undefined;
  // The arguments as the call received them: the locals at the frame's first event.
  const args = decoded.locals(frame.steps[0]!);
  for (const v of Object.values(args)) if (v.repr === out.repr && v.type === out.type) return 'identity';
  return undefined;
}

export function isTrivialRun(trace: Trace, decoded?: DecodedTrace): boolean {
  return triviality(trace, decoded) !== undefined;
}
