// Records a launch request with the engine's tracer and turns tracer errors
// into messages that say what to fix.
import type { Trace } from '../engine/trace/schema';
import type { RecordRequest } from './launchConfig';
import type { Recorder, RecordResult } from './replayDebugSession';

/** The part of the engine's TracerPool the adapter uses. */
export interface TracePool {
  trace(job: TraceJobParams, signal?: AbortSignal): Promise<Trace>;
}

/** The tracer's job parameters (python-tracer `trace` op). */
export interface TraceJobParams {
  path: string;
  entry: RecordRequest['entry'];
  cwd?: string;
  env?: Record<string, string>;
  python?: string;
  limits?: RecordRequest['limits'];
}

const HINTS: Record<string, string> = {
  syntax_error: 'Fix the syntax error, then start the session again.',
  file_not_found: 'Set "program" in the launch configuration to an existing Python file.',
  bad_entry: 'Set "entry" to a call expression such as main() or f([1, 2], 3).',
  python_not_found: 'Set "python" in the launch configuration to a Python 3.8–3.13 interpreter.',
};

export function tracerRecorder(pool: TracePool): Recorder {
  return {
    async record(request: RecordRequest, signal: AbortSignal): Promise<RecordResult> {
      const job: TraceJobParams = {
        path: request.program,
        entry: request.entry,
        cwd: request.cwd,
        ...(request.env ? { env: request.env } : {}),
        ...(request.python ? { python: request.python } : {}),
        ...(request.limits ? { limits: request.limits } : {}),
      };
      try {
        return { ok: true, trace: await pool.trace(job, signal) };
      } catch (err) {
        const e = err as Error & { code?: string };
        const hint = (e.code && HINTS[e.code]) ?? '';
        return { ok: false, message: `Could not record ${request.program}: ${e.message}${hint ? `\n${hint}` : ''}` };
      }
    },
  };
}
