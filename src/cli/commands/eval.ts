// `execverify eval cruxeval`: score a CRUXEval generations file exactly as the
// official scorer does (same rules, same 3 s limit, our sandbox), print pass@1
// and pass@5, and write per-sample verdicts.
import { readFile, writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { UsageError, type Command } from '../command';
import { resolvePython } from '../../engine/python';
import { TracerPool } from '../../engine/trace/runner';
import { JudgeClient, passAtK, type CruxevalSample } from '../../engine/judge/client';

const RowSchema = z.object({ id: z.string(), code: z.string(), input: z.string(), output: z.string() });
const GenerationsSchema = z.record(z.array(z.string()));
const CHUNK = 25;

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} ${file} is not JSON: ${(err as Error).message}`);
  }
}

async function readRows(file: string): Promise<z.infer<typeof RowSchema>[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --data ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((line, i) => {
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw new UsageError(`--data ${file} line ${i + 1} is not JSON (expected CRUXEval JSONL: id, code, input, output)`);
      }
      const row = RowSchema.safeParse(raw);
      if (!row.success) throw new UsageError(`--data ${file} line ${i + 1}: ${row.error.issues[0]!.path.join('.')}: ${row.error.issues[0]!.message}`);
      return row.data;
    });
}

export const evalCommand: Command = {
  name: 'eval',
  summary: 'Score a benchmark: `eval cruxeval` runs the official CRUXEval rules and prints pass@1 / pass@5.',
  usage:
    'execverify eval cruxeval --data cruxeval.jsonl --generations generations.json --mode output|input ' +
    '[--out scored.json] [--workers N] [--timeout-s 3] [--python PATH]',
  options: {
    data: { type: 'string' },
    generations: { type: 'string' },
    mode: { type: 'string' },
    out: { type: 'string' },
    workers: { type: 'string' },
    'timeout-s': { type: 'string' },
    python: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals[0] !== 'cruxeval' || positionals.length !== 1) throw new UsageError('the only benchmark is cruxeval: execverify eval cruxeval ...');
    const mode = values.mode;
    if (mode !== 'output' && mode !== 'input') throw new UsageError(`--mode must be output or input${mode === undefined ? '' : `, not '${String(mode)}'`}`);
    if (typeof values.data !== 'string') throw new UsageError('missing --data (the CRUXEval JSONL file)');
    if (typeof values.generations !== 'string') throw new UsageError('missing --generations (a JSON object {"sample_N": [answers...]})');
    const workers = values.workers === undefined ? Math.min(4, os.availableParallelism()) : Number(values.workers);
    if (!Number.isInteger(workers) || workers < 1) throw new UsageError(`--workers needs a positive integer, got '${String(values.workers)}'`);
    const timeoutS = values['timeout-s'] === undefined ? undefined : Number(values['timeout-s']);
    if (timeoutS !== undefined && !(timeoutS > 0)) throw new UsageError(`--timeout-s needs a positive number, got '${String(values['timeout-s'])}'`);

    const rows = await readRows(path.resolve(io.cwd, values.data));
    const genRaw = await readJson(path.resolve(io.cwd, values.generations), '--generations');
    const gens = GenerationsSchema.safeParse(genRaw);
    if (!gens.success) throw new UsageError('--generations must be a JSON object {"sample_N": ["answer", ...]} (lists of strings)');
    const missing = rows.filter((r) => !(r.id in gens.data)).map((r) => r.id);
    if (missing.length)
      throw new UsageError(`--generations has no answers for ${missing.length} samples (first: ${missing[0]}); the official scorer needs every sample`);
    const known = new Set(rows.map((r) => r.id));
    const extra = Object.keys(gens.data).filter((k) => !known.has(k));
    if (extra.length) throw new UsageError(`--generations has ${extra.length} ids not in --data (first: ${extra[0]})`);

    const samples: CruxevalSample[] = rows.map((r) => ({ code: r.code, input: r.input, output: r.output, generations: gens.data[r.id]! }));
    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    const pool = new TracerPool({ python, size: workers, env: io.env });
    const judge = new JudgeClient(pool);
    const results: boolean[][] = new Array(samples.length);
    try {
      // One lane per worker, each taking the next chunk: every worker stays busy
      // and only `workers` requests (and abort listeners) are in flight.
      let next = 0;
      const lane = async () => {
        while (next < samples.length) {
          const start = next;
          next += CHUNK;
          const rows = await judge.cruxevalScore(samples.slice(start, start + CHUNK), mode, timeoutS !== undefined ? { timeoutS } : {}, io.signal);
          rows.forEach((r, j) => (results[start + j] = r.map((v) => v.correct)));
        }
      };
      await Promise.all(Array.from({ length: workers }, lane));
    } finally {
      await pool.close();
    }
    const p1 = results.map((r) => passAtK(r.length, r.filter(Boolean).length, 1));
    const p5 = results.map((r) => passAtK(r.length, r.filter(Boolean).length, 5));
    const mean = (xs: number[]) => (xs.length ? (100 * xs.reduce((a, b) => a + b, 0)) / xs.length : 0);
    io.stdout.write(`cruxeval ${mode}: ${rows.length} samples, ${results.reduce((a, r) => a + r.length, 0)} generations\n`);
    io.stdout.write(`pass@1: ${mean(p1).toFixed(1)}  pass@5: ${mean(p5).toFixed(1)}\n`);
    if (results.some((r) => r.length < 5)) io.stdout.write('note: pass@5 counts 0 for samples with fewer than 5 generations (unbiased estimator)\n');
    if (typeof values.out === 'string') {
      const out = path.resolve(io.cwd, values.out);
      await writeFile(out, JSON.stringify(Object.fromEntries(rows.map((r, i) => [r.id, results[i]!])), null, 0) + '\n');
      io.stdout.write(`verdicts written to ${out}\n`);
    }
    return 0;
  },
};
