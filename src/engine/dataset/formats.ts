// The export formats, named once: the CLI's --format, the editor's Export
// command and the server protocol all read this list (a leaf: zod only, so the
// extension bundle takes it without the exporters' Parquet writer).
import { z } from 'zod';

export const ExportFormatSchema = z.enum(['verl', 'trl', 'openrlhf', 'sharegpt', 'cwm']);
export type ExportFormat = z.infer<typeof ExportFormatSchema>;

/** One line per format: what a trainer gets (the editor's quick pick shows it). */
export const EXPORT_FORMAT_DESCRIPTIONS: Record<ExportFormat, string> = {
  verl: 'Parquet for verl (prompt, reward_model, extra_info)',
  trl: 'TRL GRPOTrainer dataset',
  openrlhf: 'OpenRLHF JSONL',
  sharegpt: 'SFT, verified answers only (LLaMA-Factory ShareGPT)',
  cwm: 'trace frames for world-model training',
};
