// The tracer the adapter tests record with.
// TEMPORARY: runs python-tracer's `trace_bytes` in a subprocess until the engine's TracerPool lands.
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { TraceSchema, type Trace } from '../../src/engine/trace/schema';
import type { TracePool, TraceJobParams } from '../../src/adapter/tracerRecorder';

const TRACER_DIR = path.resolve(__dirname, '../../python-tracer');
const SCRIPT = `
import json, sys
from execverify.tracer import trace_bytes, JobError
try:
    sys.stdout.buffer.write(trace_bytes(json.loads(sys.stdin.read())))
except JobError as e:
    sys.stdout.write(json.dumps({"error": {"code": e.code, "message": str(e.message) if hasattr(e, "message") else str(e)}}))
`;

export function testTracePool(): TracePool & { close(): void } {
  return {
    trace(job: TraceJobParams): Promise<Trace> {
      return new Promise((resolve, reject) => {
        const child = execFile(job.python ?? 'python3', ['-c', SCRIPT], { env: { ...process.env, PYTHONPATH: TRACER_DIR }, maxBuffer: 1 << 30 }, (err, stdout) => {
          if (err) return reject(err);
          const json = JSON.parse(stdout) as { error?: { code: string; message: string } };
          if (json.error) return reject(Object.assign(new Error(json.error.message), { code: json.error.code }));
          resolve(TraceSchema.parse(json));
        });
        child.stdin!.end(JSON.stringify(job));
      });
    },
    close() {},
  };
}
