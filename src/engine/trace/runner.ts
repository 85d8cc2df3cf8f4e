// The TracerPool: the worker pool (worker/pool.ts) with trace jobs on top —
// one job, or many in batches — every trace validated before it is returned.
import { z } from 'zod';
import { TracerError, WorkerPool, type WorkerPoolOptions } from '../worker/pool';
import { EntrySchema, LimitsSchema, TRACE_SCHEMA_VERSION, type Trace } from './schema';
import { safeParseTrace } from './validate';

export { TracerError, WORKER_MAIN, type TracerErrorCode } from '../worker/pool';
export type TracerPoolOptions = WorkerPoolOptions;

/** One trace job: a file (or its source text) and how to enter it. */
export const TraceJobSchema = z.object({
  /** The file to trace; its path is shown in the trace. Read from disk unless `source` is given. */
  path: z.string().optional(),
  /** The exact source to run (a snippet, an unsaved editor buffer). */
  source: z.string().optional(),
  entry: EntrySchema,
  /** Working directory of the run (and sys.path root for `function` entries). */
  cwd: z.string().optional(),
  /** The run's standard input: fd 0 holds this text's UTF-8 bytes (bounded by limits.stdinBytes). Absent: a read is limit `stdin`. */
  stdin: z.string().optional(),
  limits: LimitsSchema.optional(),
  /** Force a backend (tests compare them); default: monitoring on 3.12+, settrace before. */
  backend: z.enum(['monitoring', 'settrace']).optional(),
  /** Let the traced program write files (off by default: traced code is untrusted). */
  allowWrites: z.boolean().optional(),
});
export type TraceJob = z.input<typeof TraceJobSchema>;

/** Persistent tracer workers (see WorkerPool) that trace jobs; `request` still sends any op. */
export class TracerPool extends WorkerPool {
  /** Traces one job; the Trace is validated (TraceSchema's rules, see validate.ts). */
  async trace(job: TraceJob, signal?: AbortSignal): Promise<Trace> {
    const parsed = TraceJobSchema.safeParse(job);
    if (!parsed.success) {
      throw new TracerError('bad_entry', `invalid trace job: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    const wall = parsed.data.limits?.wallTimeMs ?? 10_000;
    const raw = await this.request('trace', parsed.data as Record<string, unknown>, signal, wall + this.graceMs);
    const trace = safeParseTrace(raw);
    if (!trace.ok) throw new TracerError('invalid_trace', `the trace does not match ${TRACE_SCHEMA_VERSION}: ${trace.error}`);
    return trace.trace;
  }

  /**
   * Traces many jobs: they go to the workers in batches (op `trace_batch`),
   * which saves a round trip per job — the way to trace a benchmark or a
   * harvest. Resolves to one entry per job, in order: its Trace, or the
   * TracerError that job got (a bad job does not fail the others).
   *
   * As few batches as every worker taking the same share allows, none
   * over `batchSize` (512: the worker's chunk size, tracer.py CHUNK_SIZE):
   * the shareable jobs of a batch then run in one fresh child, and each
   * child's fork, set-up, copy-on-write faults and exit cost some 4–5 ms of
   * CPU (the 800 CRUXEval jobs: 2 batches, 309 ms, against 347 ms in
   * batches of 128 and quarter batches at the end: docs/security.md, "What
   * isolation costs"). A batch takes every k-th job rather than a run of
   * neighbours, so jobs sorted by cost (a dataset by length) still split
   * evenly. A busy worker already holds its next batch (pipelined), so it
   * never waits a round trip between batches.
   */
  async traceMany(jobs: TraceJob[], signal?: AbortSignal, batchSize = 512): Promise<Array<Trace | TracerError>> {
    const out: Array<Trace | TracerError> = new Array(jobs.length);
    const valid: Array<{ index: number; job: z.infer<typeof TraceJobSchema> }> = [];
    const count = Math.ceil(Math.ceil(jobs.length / Math.max(1, batchSize)) / this.size) * this.size;
    this.warm(Math.min(count, jobs.length)); // workers start while the jobs are checked
    jobs.forEach((job, index) => {
      const parsed = TraceJobSchema.safeParse(job);
      if (parsed.success) valid.push({ index, job: parsed.data });
      else out[index] = new TracerError('bad_entry', `invalid trace job: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    });
    const batches: Array<typeof valid> = Array.from({ length: Math.min(count, valid.length) }, () => []);
    valid.forEach((v, k) => batches[k % batches.length]!.push(v));
    await Promise.all(
      batches.map(async (batch) => {
        const wall = batch.reduce((sum, b) => sum + (b.job.limits?.wallTimeMs ?? 10_000), 0);
        let raw: unknown;
        try {
          raw = await this.submit('trace_batch', { jobs: batch.map((b) => b.job) }, signal, wall + this.graceMs, true);
        } catch (err) {
          if ((err as TracerError).code === 'answer_too_large' && batch.length > 1) {
            // Big traces: each alone fits in an answer (traceBytes bounds one trace).
            await Promise.all(batch.map(async (b) => (out[b.index] = await this.trace(b.job, signal).catch((e: TracerError) => e))));
            return;
          }
          for (const b of batch) out[b.index] = err as TracerError;
          return;
        }
        // One frame per job (worker.py, Frames), each parsed alone: a trace
        // the worker passed on unread (a shared child's, tracer._assemble)
        // that is not one JSON value fails its own job and no other.
        const frames = raw as Buffer[];
        if (!Array.isArray(frames) || frames.length !== batch.length) {
          for (const b of batch) out[b.index] = new TracerError('protocol', 'trace_batch answered with the wrong number of traces');
          return;
        }
        batch.forEach((b, k) => {
          let item: { error?: { code?: string; message?: string } };
          try {
            item = JSON.parse(frames[k]!.toString('utf8')) as typeof item;
          } catch {
            out[b.index] = new TracerError('tampered', "the trace of this job is not one JSON value: its messages were not the tracer's");
            return;
          }
          if (item && typeof item === 'object' && item.error) {
            out[b.index] = new TracerError(String(item.error.code ?? 'internal'), String(item.error.message ?? ''));
            return;
          }
          const t = safeParseTrace(item);
          out[b.index] = t.ok ? t.trace : new TracerError('invalid_trace', `the trace does not match ${TRACE_SCHEMA_VERSION}: ${t.error}`);
        });
      }),
    );
    return out;
  }
}
