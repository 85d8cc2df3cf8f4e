// Which samples an export takes by curriculum level and pass rate
// (`execverify export --levels 1,2 --pass-band 0,0.3|paper`).
import type { SampleRecord } from '../dataset/record';
import { inBand, parsePassBand, type PassBand } from '../harvest/difficulty';

export interface Selection {
  /** Synthesized samples of these levels only; harvested ones (no level) are left out when set. */
  levels?: readonly number[];
  /** Scored samples whose pass rate is in the band; unscored ones are left out when set. */
  passBand?: PassBand;
}

export function selectRecords(records: readonly SampleRecord[], selection: Selection): { kept: SampleRecord[]; skipped: Record<string, number> } {
  const skipped: Record<string, number> = {};
  const skip = (reason: string) => {
    skipped[reason] = (skipped[reason] ?? 0) + 1;
    return false;
  };
  const kept = records.filter((r) => {
    if (selection.levels) {
      const level = r.provenance.synthesis?.level;
      if (level === undefined || level === null) return skip('no curriculum level (--levels)');
      if (!selection.levels.includes(level)) return skip('another level (--levels)');
    }
    if (selection.passBand) {
      if (r.difficulty.passRate === null) return skip('not scored (--pass-band)');
      if (!inBand(r.difficulty.passRate, selection.passBand)) return skip('outside the pass band (--pass-band)');
    }
    return true;
  });
  return { kept, skipped };
}

/** The paper's rule: a sample the reference model gets right more than 3 times in 10 is dropped. */
export const PAPER_PASS_BAND: PassBand = { min: 0, max: 0.3 };

/** `--pass-band MIN,MAX` or `paper`; an error message for anything else. */
export function parseBand(text: string): PassBand | string {
  if (text === 'paper') return PAPER_PASS_BAND;
  const band = parsePassBand(text);
  return typeof band === 'string' ? `${band}, or 'paper' (${PAPER_PASS_BAND.min},${PAPER_PASS_BAND.max})` : band;
}
