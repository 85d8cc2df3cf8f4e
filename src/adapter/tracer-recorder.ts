// Records a launch request with the engine's TracerPool. The pool is per
// interpreter and environment (a launch config may choose both), shared by
// every session that uses the same pair.
import { traceViaDebugpy } from '../engine/dap/debugpy-tracer';
import { resolvePython } from '../engine/python';
import { TracerPool, type TraceJob } from '../engine/trace/runner';
import type { Trace } from '../engine/trace/schema';
import type { RecordRequest } from './launch-config';
import type { Recorder, RecordResult } from './replay-debug-session';

/** The part of the engine's TracerPool the adapter uses. */
export interface TracePool {
  trace(job: TraceJob, signal?: AbortSignal): Promise<Trace>;
}

/** Picks the pool for a launch's interpreter and extra environment (undefined: the defaults). */
export type PoolFor = (options: { python?: string; env?: Record<string, string> }) => TracePool;

export function tracerRecorder(poolFor: PoolFor): Recorder {
  return {
    async record(request: RecordRequest, signal: AbortSignal): Promise<RecordResult> {
      const job: TraceJob = {
        path: request.program,
        entry: request.entry,
        cwd: request.cwd,
        ...(request.limits ? { limits: request.limits } : {}),
      };
      try {
        if (request.via === 'debugpy' && request.entry.kind === 'call') {
          const python = resolvePython(request.python, process.env);
          const via = { path: request.program, expr: request.entry.expr, python, env: process.env, programEnv: request.env, limits: request.limits };
          return { ok: true, trace: await traceViaDebugpy(via, signal) };
        }
        const pool = poolFor({ ...(request.python ? { python: request.python } : {}), ...(request.env ? { env: request.env } : {}) });
        return { ok: true, trace: await pool.trace(job, signal) };
      } catch (err) {
        // TracerError messages already end with what to do next.
        return { ok: false, message: `Could not record ${request.program}: ${(err as Error).message}` };
      }
    },
  };
}

/**
 * Pools keyed by interpreter and environment: the default pool for plain
 * launches, one single-worker pool per other combination. `close` stops all.
 */
export class TracerPools {
  private readonly pools = new Map<string, TracerPool>();
  constructor(private readonly defaults: { python?: string; size?: number; env?: NodeJS.ProcessEnv } = {}) {}

  readonly poolFor: PoolFor = ({ python, env }) => {
    const key = JSON.stringify([python ?? null, env ?? null]);
    let pool = this.pools.get(key);
    if (!pool) {
      const baseEnv = this.defaults.env ?? process.env;
      pool = new TracerPool({
        ...((python ?? this.defaults.python) ? { python: python ?? this.defaults.python } : {}),
        size: python || env ? 1 : (this.defaults.size ?? 1),
        env: baseEnv,
        ...(env ? { jobEnv: env } : {}),
      });
      this.pools.set(key, pool);
    }
    return pool;
  };

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.close()));
  }
}
