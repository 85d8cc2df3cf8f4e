// Difficulty of a sample: a structural score from its trace (how much there is
// to simulate), and — when a model was asked — the pass rate, with the band of
// pass rates worth keeping ("not trivial, but solvable").
import type { Difficulty } from '../dataset/record';
import type { Trace } from '../trace/schema';

export interface StructuralCounts {
  /** `line` events: statements the interpreter ran. */
  steps: number;
  /** Distinct (line → next line) edges out of lines that went to more than one place. */
  branches: number;
  /** Backward jumps inside a frame: one per loop iteration (and per `for` re-check). */
  loopIterations: number;
  /** Deepest control-flow nesting in the code plus the deepest call depth of the run. */
  nesting: number;
  /** Distinct (variable, value) pairs the run produced. */
  distinctValues: number;
}

/** Saturating weights: each component adds up to 1/5 of the score, half of that at `k`. */
const HALF_AT: Record<keyof StructuralCounts, number> = {
  steps: 40,
  branches: 4,
  loopIterations: 10,
  nesting: 3,
  distinctValues: 20,
};

export function structuralCounts(trace: Trace, codeNesting = 0): StructuralCounts {
  const lastLine = new Map<number, number>(); // frame → its previous line event
  const successors = new Map<string, Set<number>>();
  const values = new Set<string>();
  let steps = 0;
  let loops = 0;
  let depth = 0;
  for (const step of trace.steps) {
    depth = Math.max(depth, step.depth);
    for (const [name, value] of Object.entries(step.set ?? {})) values.add(`${name}\u0000${value.repr}`);
    if (step.event !== 'line') {
      if (step.event === 'return' || step.event === 'exception') lastLine.delete(step.frame);
      continue;
    }
    steps += 1;
    const prev = lastLine.get(step.frame);
    if (prev !== undefined) {
      const key = `${step.file}:${step.frame}:${prev}`;
      const set = successors.get(key) ?? new Set<number>();
      set.add(step.line);
      successors.set(key, set);
      if (step.line <= prev) loops += 1;
    }
    lastLine.set(step.frame, step.line);
  }
  // Edges are per frame; merge frames of the same function so a recursive
  // function's branches are counted once.
  const perLine = new Map<string, Set<number>>();
  for (const [key, set] of successors) {
    const [file, , line] = key.split(':');
    const lineKey = `${file}:${line}`;
    const merged = perLine.get(lineKey) ?? new Set<number>();
    for (const n of set) merged.add(n);
    perLine.set(lineKey, merged);
  }
  let branches = 0;
  for (const set of perLine.values()) if (set.size > 1) branches += set.size;
  return { steps, branches, loopIterations: loops, nesting: codeNesting + depth, distinctValues: values.size };
}

/** Score in [0, 1): the mean of x/(x+k) over the five counts. */
export function structuralScore(counts: StructuralCounts): number {
  const keys = Object.keys(HALF_AT) as (keyof StructuralCounts)[];
  const total = keys.reduce((sum, key) => sum + counts[key] / (counts[key] + HALF_AT[key]), 0);
  return Math.round((total / keys.length) * 1e4) / 1e4;
}

export function structuralDifficulty(trace: Trace, codeNesting = 0): Difficulty {
  const counts = structuralCounts(trace, codeNesting);
  return { ...counts, score: structuralScore(counts), passRate: null, k: 0 };
}

/** Pass rates kept when a band is set: both ends inclusive. */
export interface PassBand {
  min: number;
  max: number;
}

/** Parses `--pass-band 0.1,0.9`; returns an error message for anything else. */
export function parsePassBand(text: string): PassBand | string {
  const parts = text.split(',').map((p) => Number(p.trim()));
  if (parts.length !== 2 || parts.some((p) => !Number.isFinite(p) || p < 0 || p > 1) || parts[0]! > parts[1]!) {
    return `--pass-band must be MIN,MAX with 0 <= MIN <= MAX <= 1 (e.g. 0.1,0.9), got '${text}'`;
  }
  return { min: parts[0]!, max: parts[1]! };
}

export function inBand(passRate: number, band: PassBand): boolean {
  return passRate >= band.min && passRate <= band.max;
}

/** Difficulty histogram: counts per tenth of the score (0.0–0.1, …, 0.9–1.0). */
export function histogram(scores: number[], bins = 10): number[] {
  const counts = new Array<number>(bins).fill(0);
  for (const s of scores) counts[Math.min(bins - 1, Math.max(0, Math.floor(s * bins)))]! += 1;
  return counts;
}
