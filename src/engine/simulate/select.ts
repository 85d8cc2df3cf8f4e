// Best-of-k selection and its numbers (docs/self-simulation.md#numbers): the
// expected pass@1 of picking one candidate uniformly from a set, by three rules.
// Pure functions over per-candidate facts, so every number can be recomputed.

/** What selection needs of one candidate. */
export interface CandidateFacts {
  /** The model predicts it passes every public test. */
  simulated: boolean;
  /** It really passes every public test. */
  realPublic: boolean;
  /** It really passes every hidden test. */
  realHidden: boolean;
}

/** A candidate solves the problem when it really passes every public and every hidden test. */
export const solves = (c: CandidateFacts): boolean => c.realPublic && c.realHidden;

/** The expected share of solving picks when one of `pool` is drawn uniformly (pool empty: 0). */
function expected(pool: readonly CandidateFacts[]): number {
  return pool.length ? pool.filter(solves).length / pool.length : 0;
}

export interface Selection {
  /** Any candidate, uniformly: the expected value, no sampling noise. */
  random: number;
  /** The paper's rule: uniformly among the candidates simulated to pass every public test; none → random. */
  simulated: number;
  /** The same rule on the real public-test runs (the oracle an executor would give). */
  oracle: number;
}

export function select(candidates: readonly CandidateFacts[]): Selection {
  const accepted = candidates.filter((c) => c.simulated);
  const passing = candidates.filter((c) => c.realPublic);
  return {
    random: expected(candidates),
    simulated: accepted.length ? expected(accepted) : expected(candidates),
    oracle: passing.length ? expected(passing) : expected(candidates),
  };
}

export interface SelectionSummary {
  problems: number;
  candidates: number;
  /** Mean over problems of each rule's expected pass@1. */
  pass_at_1: Selection;
  /** oracle − simulated: what simulating instead of executing costs. */
  gap: number;
  /** Of the candidates that really pass the public tests, the share the simulation rejects (null: none pass). */
  correct_rejected: number | null;
  /** Of the candidates that really fail a public test, the share the simulation accepts (null: none fail). */
  wrong_accepted: number | null;
}

export function summarize(problems: readonly (readonly CandidateFacts[])[]): SelectionSummary {
  const selections = problems.map(select);
  const mean = (f: (s: Selection) => number) => (selections.length ? selections.reduce((a, s) => a + f(s), 0) / selections.length : 0);
  const all = problems.flat();
  const passing = all.filter((c) => c.realPublic);
  const failing = all.filter((c) => !c.realPublic);
  const pass_at_1 = { random: mean((s) => s.random), simulated: mean((s) => s.simulated), oracle: mean((s) => s.oracle) };
  return {
    problems: problems.length,
    candidates: all.length,
    pass_at_1,
    gap: pass_at_1.oracle - pass_at_1.simulated,
    correct_rejected: passing.length ? passing.filter((c) => !c.simulated).length / passing.length : null,
    wrong_accepted: failing.length ? failing.filter((c) => c.simulated).length / failing.length : null,
  };
}
