// One place that turns a traced, questioned run into a sample for the store:
// the editor's "Add to Dataset" (src/server/samples.ts) and a harvest
// (engine/harvest/pipeline.ts) both call buildSample. The store
// (dataset/store.ts) refuses a record holding a credential, for both.
import { decodeTrace } from '../trace/decode';
import type { Trace } from '../trace/schema';
import { sha256, stableJson, type SampleInput, type TraceFrame } from './record';

/** Frames kept per sample unless the producer says otherwise. */
export const DEFAULT_MAX_FRAMES = 200;

export type SampleParts = Omit<SampleInput, 'trace' | 'frames'> & {
  /** The run the questions were built from: its digest, size, Python and frames go into the sample. */
  trace: Trace;
  /** How a harvest ran it: the PYTHONHASHSEED and the other seeds that gave the same truth. */
  seeds?: { hashSeed: number; confirmed: number[] };
  maxFrames?: number;
};

export function buildSample(parts: SampleParts): SampleInput {
  const { trace, seeds, maxFrames, ...rest } = parts;
  return {
    ...rest,
    trace: {
      digest: sha256(stableJson(trace)),
      steps: trace.steps.length,
      // A C trace (recorded through lldb) names its compiler in place of a Python version.
      python: trace.python?.version ?? trace.runtime?.compiler ?? 'unknown',
      ...(seeds ? { hashSeed: seeds.hashSeed, confirmedSeeds: [...seeds.confirmed] } : {}),
      ...(trace.python?.isolation ? { isolation: trace.python.isolation } : {}),
    },
    frames: traceFrames(trace, maxFrames ?? DEFAULT_MAX_FRAMES),
  };
}

/** CWM-style frames: for each line event of the main file, the line about to run and the locals before it. */
export function traceFrames(trace: Trace, maxFrames: number): TraceFrame[] {
  const lineSteps: number[] = [];
  for (let i = 0; i < trace.steps.length && lineSteps.length < maxFrames; i++) {
    const s = trace.steps[i]!;
    if (s.event === 'line' && s.file === 0) lineSteps.push(i);
  }
  if (lineSteps.length === 0) return [];
  // A step's locals depend only on the steps before it: decode just the prefix the frames need.
  const decoded = decodeTrace({ ...trace, steps: trace.steps.slice(0, lineSteps.at(-1)! + 1) });
  const lines = trace.files[0]?.source.split('\n') ?? [];
  return lineSteps.map((i) => {
    const step = trace.steps[i]!;
    // fromEntries defines each name as its own property (a local named __proto__ included).
    const locals = Object.fromEntries(Object.entries(decoded.locals(i)).map(([name, value]) => [name, value.repr]));
    return { line: step.line, source: (lines[step.line - 1] ?? '').trimEnd(), event: step.event, fn: step.fn, locals };
  });
}
