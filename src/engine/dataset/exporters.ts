// Exporters: canonical records → the files trainers read without glue code
// (verl Parquet, TRL, OpenRLHF JSONL, LLaMA-Factory ShareGPT SFT, CWM-style
// trace frames). docs/dataset-formats.md documents every column.
import * as path from 'node:path';
import type { ExportFormat } from './formats';
import { encodeParquet, writeFileAtomic, type ParquetColumns } from './parquet';
import type { ChatMessage, SampleRecord, Split } from './record';

/** `i/n`: this process exports shard i (0-based) of n. */
export interface Shard {
  index: number;
  count: number;
}

/** Parses `--shard i/n` (0 ≤ i < n); returns an error message for anything else. */
export function parseShard(text: string): Shard | string {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) return `--shard must look like i/n (e.g. 0/4), got '${text}'`;
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1 || index >= count) return `--shard ${text}: need 0 <= i < n`;
  return { index, count };
}

/** Which shard a key belongs to: a stable hash, the same on every machine and run. */
export function shardOf(hexKey: string, count: number): number {
  return parseInt(hexKey.slice(0, 8), 16) % count;
}

export function inShard(hexKey: string, shard: Shard | undefined): boolean {
  return !shard || shardOf(hexKey, shard.count) === shard.index;
}

export interface ExportOptions {
  format: ExportFormat;
  /** Output directory; one file per split. */
  out: string;
  shard?: Shard;
  /** Only these splits (default: all present). */
  splits?: Split[];
  /** verl `data_source` (default `execverify/<project>`). */
  dataSource?: string;
  /** TRL: write Parquet instead of JSONL. */
  parquet?: boolean;
}

export interface ExportResult {
  files: { path: string; split: Split; rows: number }[];
  rows: number;
  /** Records left out, by reason (e.g. `no_verified_answer` for SFT). */
  skipped: Record<string, number>;
}

export const VERL_ABILITY = 'code_execution_reasoning';

const CHAT: ParquetColumns[number][1] = {
  list: {
    struct: [
      ['role', 'string'],
      ['content', 'string'],
    ],
  },
};

/** verl's `extra_info`: the same fields on every row (Parquet needs one structure). */
const EXTRA_INFO: ParquetColumns[number][1] = {
  struct: [
    ['split', 'string'],
    ['index', 'int64'],
    ['id', 'string'],
    ['project', 'string'],
    ['repository', 'string'],
    ['commit', 'string'],
    ['file', 'string'],
    ['function', 'string'],
    ['license', 'string'],
    ['entry', 'string'],
    ['difficulty', 'double'],
    ['questions', 'int64'],
  ],
};

export const VERL_COLUMNS: ParquetColumns = [
  ['data_source', 'string'],
  ['prompt', CHAT],
  ['ability', 'string'],
  [
    'reward_model',
    {
      struct: [
        ['style', 'string'],
        ['ground_truth', 'string'],
      ],
    },
  ],
  ['extra_info', EXTRA_INFO],
];

export const TRL_COLUMNS: ParquetColumns = [
  ['prompt', CHAT],
  ['ground_truth', 'string'],
  ['data_source', 'string'],
  ['sample_id', 'string'],
  ['difficulty', 'double'],
];

function chat(messages: ChatMessage[]): { role: string; content: string }[] {
  return messages.map((m) => ({ role: m.role, content: m.content }));
}

function dataSourceOf(record: SampleRecord, options: ExportOptions): string {
  return options.dataSource ?? `execverify/${record.provenance.project}`;
}

export function verlRow(record: SampleRecord, index: number, options: ExportOptions): Record<string, unknown> {
  const p = record.provenance;
  return {
    data_source: dataSourceOf(record, options),
    prompt: chat(record.prompt),
    // A code-generation task (engine/synthesize/codegen.ts) is another ability, scored by the same entry point.
    ability: record.questions[0]?.kind === 'codegen' ? 'code_generation' : VERL_ABILITY,
    reward_model: { style: 'rule', ground_truth: record.groundTruth },
    extra_info: {
      split: record.split,
      index,
      id: record.id,
      project: p.project,
      repository: p.repository,
      commit: p.commit,
      file: p.file,
      function: p.function,
      license: p.license,
      entry: record.entry,
      difficulty: record.difficulty.score,
      questions: record.questions.length,
    },
  };
}

export function trlRow(record: SampleRecord, options: ExportOptions): Record<string, unknown> {
  return {
    prompt: chat(record.prompt),
    ground_truth: record.groundTruth,
    data_source: dataSourceOf(record, options),
    sample_id: record.id,
    difficulty: record.difficulty.score,
  };
}

/** OpenRLHF: `--input_key input --label_key label --apply_chat_template`. */
export function openrlhfRow(record: SampleRecord, options: ExportOptions): Record<string, unknown> {
  return { input: chat(record.prompt), label: record.groundTruth, datasource: dataSourceOf(record, options), id: record.id };
}

/** The best verified answer: a model answer with full reward, else the reference built from the real run. */
export function verifiedAnswer(record: SampleRecord): string | null {
  // Fully right = every part the judge scored is 1 (a part it did not score is null).
  const right = record.answers.find((a) => (a.rIo === null || a.rIo === 1) && (a.rWhite === null || a.rWhite === 1) && a.reward > 0);
  if (right) return right.text;
  return record.reference;
}

/** LLaMA-Factory ShareGPT: `{"conversations": [...], "system": ...}` with verified answers only. */
export function sharegptRow(record: SampleRecord): Record<string, unknown> | null {
  const answer = verifiedAnswer(record);
  if (answer === null) return null;
  const system = record.prompt
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  const conversations = record.prompt.filter((m) => m.role !== 'system').map((m) => ({ from: m.role === 'user' ? 'human' : 'gpt', value: m.content }));
  conversations.push({ from: 'gpt', value: answer });
  return system ? { conversations, system, id: record.id } : { conversations, id: record.id };
}

/** CWM-style: the program, then each step as (line about to run, its source, the locals before it). */
export function cwmRow(record: SampleRecord): Record<string, unknown> {
  return {
    id: record.id,
    code: record.code,
    entry: record.entry,
    frames: record.frames,
    result: record.result,
    split: record.split,
  };
}

function fileName(split: Split, ext: string, shard: Shard | undefined): string {
  if (!shard) return `${split}.${ext}`;
  const pad = (n: number) => String(n).padStart(5, '0');
  return `${split}-${pad(shard.index)}-of-${pad(shard.count)}.${ext}`;
}

const jsonl = (rows: Record<string, unknown>[]) => rows.map((r) => JSON.stringify(r) + '\n').join('');

/**
 * Writes the records of this shard, one file per split, in a stable order
 * (by id), so the same store always exports byte-identical files.
 */
export function exportRecords(records: SampleRecord[], options: ExportOptions): ExportResult {
  const chosen = records
    .filter((r) => inShard(r.id, options.shard))
    .filter((r) => !options.splits || options.splits.includes(r.split))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const bySplit = new Map<Split, SampleRecord[]>();
  for (const r of chosen) bySplit.set(r.split, [...(bySplit.get(r.split) ?? []), r]);
  const result: ExportResult = { files: [], rows: 0, skipped: {} };
  for (const split of ['train', 'validation', 'test'] as const) {
    const group = bySplit.get(split);
    if (!group) continue;
    let rows: Record<string, unknown>[];
    let data: Uint8Array | string;
    let ext: string;
    switch (options.format) {
      case 'verl':
        rows = group.map((r, i) => verlRow(r, i, options));
        data = encodeParquet(VERL_COLUMNS, rows);
        ext = 'parquet';
        break;
      case 'trl':
        rows = group.map((r) => trlRow(r, options));
        ext = options.parquet ? 'parquet' : 'jsonl';
        data = options.parquet ? encodeParquet(TRL_COLUMNS, rows) : jsonl(rows);
        break;
      case 'openrlhf':
        rows = group.map((r) => openrlhfRow(r, options));
        data = jsonl(rows);
        ext = 'jsonl';
        break;
      case 'sharegpt': {
        rows = [];
        for (const r of group) {
          const row = sharegptRow(r);
          if (row) rows.push(row);
          else result.skipped.no_verified_answer = (result.skipped.no_verified_answer ?? 0) + 1;
        }
        data = JSON.stringify(rows, null, 1) + '\n';
        ext = 'json';
        break;
      }
      case 'cwm':
        rows = group.map(cwmRow);
        data = jsonl(rows);
        ext = 'jsonl';
        break;
    }
    if (rows.length === 0) continue;
    const file = path.join(options.out, fileName(split, ext, options.shard));
    writeFileAtomic(file, data);
    result.files.push({ path: file, split, rows: rows.length });
    result.rows += rows.length;
  }
  return result;
}
