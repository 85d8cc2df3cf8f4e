// `execverify export STORE --format verl|trl|openrlhf|sharegpt|cwm --out DIR`:
// write a harvested store in the format a trainer reads. See docs/dataset-formats.md.
import * as path from 'node:path';
import { UsageError, type Command } from '../command';
import { exportRecords, parseShard } from '../../engine/dataset/exporters';
import { ExportFormatSchema } from '../../engine/dataset/formats';
import { SplitSchema, type Split } from '../../engine/dataset/record';
import { readStore } from '../../engine/dataset/store';
import { parseBand, selectRecords } from '../../engine/synthesize/select';
import { codegenRecords } from '../../engine/synthesize/codegen';
import { TracerPool } from '../../engine/trace/runner';
import { resolvePython } from '../../engine/python';

export const exportCommand: Command = {
  name: 'export',
  summary: 'Write the samples of STORE (a harvest --out directory) for a trainer: verl Parquet, TRL, OpenRLHF JSONL, ShareGPT SFT, or CWM trace frames.',
  usage: `execverify export STORE --format ${ExportFormatSchema.options.join('|')} --out DIR [--shard i/n] [--split train,test] [--data-source NAME] [--parquet] [--levels 1,2] [--pass-band MIN,MAX|paper] [--task execution|codegen]`,
  options: {
    format: { type: 'string', short: 'f' },
    out: { type: 'string', short: 'o' },
    shard: { type: 'string' },
    split: { type: 'string' },
    'data-source': { type: 'string' },
    parquet: { type: 'boolean' },
    levels: { type: 'string' },
    'pass-band': { type: 'string' },
    task: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals.length !== 1) throw new UsageError('give exactly one STORE (the --out directory of `execverify harvest`)');
    const format = ExportFormatSchema.safeParse(values.format);
    if (!format.success) throw new UsageError(`--format must be one of ${ExportFormatSchema.options.join(', ')}`);
    if (typeof values.out !== 'string') throw new UsageError('--out DIR is required');
    const shard = values.shard === undefined ? undefined : parseShard(String(values.shard));
    if (typeof shard === 'string') throw new UsageError(shard);
    let splits: Split[] | undefined;
    if (typeof values.split === 'string') {
      splits = values.split.split(',').map((s) => {
        const parsed = SplitSchema.safeParse(s.trim());
        if (!parsed.success) throw new UsageError(`--split takes ${SplitSchema.options.join(', ')} (comma-separated), not '${s}'`);
        return parsed.data;
      });
    }
    if (values.parquet && format.data !== 'trl') throw new UsageError('--parquet applies to --format trl (verl is always Parquet)');
    let levels: number[] | undefined;
    if (typeof values.levels === 'string') {
      levels = values.levels.split(',').map((s) => Number(s.trim()));
      if (levels.some((n) => !Number.isInteger(n) || n < 1)) throw new UsageError(`--levels takes curriculum levels, e.g. 1,2; got '${values.levels}'`);
    }
    const task = String(values.task ?? 'execution');
    if (task !== 'execution' && task !== 'codegen') throw new UsageError(`--task must be execution or codegen, not '${task}'`);
    const band = values['pass-band'] === undefined ? undefined : parseBand(String(values['pass-band']));
    if (typeof band === 'string') throw new UsageError(band);
    const store = readStore(path.resolve(io.cwd, positionals[0]!));
    // Synthesized samples by curriculum level and pass rate (docs/synthesis.md#export).
    const selected = selectRecords(store.items, {
      ...(levels ? { levels } : {}),
      ...(band ? { passBand: band } : {}),
    });
    for (const [reason, n] of Object.entries(selected.skipped)) io.stdout.write(`left out ${n} samples: ${reason}\n`);
    let rows = selected.kept;
    // --task codegen: "write this function" tasks, the stored calls as unit tests (docs/synthesis.md#code-generation).
    if (task === 'codegen') {
      const pool = new TracerPool({ python: resolvePython(undefined, io.env), env: io.env, size: 1 });
      try {
        const tasks = await codegenRecords(rows, pool, { signal: io.signal });
        for (const [reason, n] of Object.entries(tasks.skipped)) io.stdout.write(`left out ${n} functions: ${reason}\n`);
        rows = tasks.records;
      } finally {
        await pool.close();
      }
    }
    const result = exportRecords(rows, {
      format: format.data,
      out: path.resolve(io.cwd, values.out),
      shard,
      splits,
      dataSource: typeof values['data-source'] === 'string' ? values['data-source'] : undefined,
      parquet: Boolean(values.parquet),
    });
    for (const f of result.files) io.stdout.write(`${path.relative(io.cwd, f.path)}: ${f.rows} rows (${f.split})\n`);
    for (const [reason, n] of Object.entries(result.skipped)) io.stdout.write(`skipped ${n} samples: ${reason}\n`);
    if (store.invalid > 0) io.stderr.write(`warning: ${store.invalid} invalid lines in the store were ignored\n`);
    if (result.rows === 0) {
      io.stderr.write('nothing exported: the store (or this shard / split) has no samples\n');
      return 1;
    }
    io.stdout.write(`${result.rows} rows written\n`);
    // Where the reward lives, so the rows plug into the trainer unchanged (docs/dataset-formats.md).
    const hints: Record<string, string> = {
      verl: 'reward: custom_reward_function.path=python-tracer/execverify/reward.py custom_reward_function.name=compute_score',
      trl: 'reward: from execverify.reward import trl_reward; GRPOTrainer(reward_funcs=[trl_reward], ...)',
      openrlhf: 'reward: --input_key input --label_key label --apply_chat_template --remote_rm_url python-tracer/execverify/reward.py',
    };
    if (hints[format.data])
      io.stdout.write(`${hints[format.data]}${task === 'codegen' ? ' (the same entry point scores code generation: execverify.codegen_reward)' : ''}\n`);
    return 0;
  },
};
