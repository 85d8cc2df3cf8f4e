// `execverify trace FILE --entry "f(1)"`: record one run and print it, step by
// step or as the JSON Trace.
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, type CliIO, type Command } from '../command';
import { resolvePython } from '../../engine/python';
import { TracerPool, TracerError, type TraceJob } from '../../engine/trace/runner';
import { traceViaDebugpy } from '../../engine/dap/debugpy-tracer';
import { traceViaLldb } from '../../engine/dap/lldb-tracer';
import { TRACE_SCHEMA_VERSION, type Limits, type Trace, type Value } from '../../engine/trace/schema';

const LIMIT_FLAGS: Array<[flag: string, key: keyof Limits]> = [
  ['max-steps', 'steps'],
  ['timeout-ms', 'wallTimeMs'],
  ['cpu-ms', 'cpuTimeMs'],
  ['memory-mb', 'memoryMb'],
  ['output-bytes', 'outputBytes'],
  ['max-depth', 'recursionDepth'],
  ['trace-bytes', 'traceBytes'],
  ['repr-chars', 'reprChars'],
  ['stdin-bytes', 'stdinBytes'],
];

export const traceCommand: Command = {
  name: 'trace',
  summary: 'Run FILE under the tracer and print every step (or the JSON trace with --json).',
  usage:
    'execverify trace FILE (--entry "f([1, 2], 3)" | --script [ARG ...] | --function mod:fn [--call-args "1, 2"]) ' +
    '[--stdin PATH] [--json] [--python PATH] [--backend monitoring|settrace] [--via debugpy|lldb] ' +
    LIMIT_FLAGS.map(([f]) => `[--${f} N]`).join(' '),
  options: {
    entry: { type: 'string', short: 'e' },
    script: { type: 'boolean' },
    args: { type: 'string', multiple: true },
    function: { type: 'string' },
    'call-args': { type: 'string' },
    json: { type: 'boolean' },
    stdin: { type: 'string' },
    python: { type: 'string' },
    backend: { type: 'string' },
    via: { type: 'string' },
    ...Object.fromEntries(LIMIT_FLAGS.map(([f]) => [f, { type: 'string' as const }])),
  },
  async run(values, positionals, io) {
    if (positionals.length === 0 && typeof values.function !== 'string') throw new UsageError('missing FILE to trace');
    // With --script, words after FILE are the script's arguments.
    if (positionals.length > 1 && values.script !== true) throw new UsageError(`one FILE only (got ${positionals.join(', ')})`);
    const modes = [values.entry !== undefined, values.script === true, values.function !== undefined].filter(Boolean).length;
    if (modes === 0) throw new UsageError('say how to run FILE: --entry "f(1, 2)", --script, or --function mod:fn');
    if (modes > 1) throw new UsageError('use only one of --entry, --script, --function');
    if (values.backend !== undefined && values.backend !== 'monitoring' && values.backend !== 'settrace') {
      throw new UsageError(`--backend must be monitoring or settrace, not '${String(values.backend)}'`);
    }
    const limits: Limits = {};
    for (const [flag, key] of LIMIT_FLAGS) {
      const raw = values[flag];
      if (raw === undefined) continue;
      const n = Number(raw);
      if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${flag} needs a positive integer, got '${String(raw)}'`);
      limits[key] = n;
    }
    const job: TraceJob = { entry: { kind: 'script', args: [] }, limits, cwd: io.cwd };
    const file = positionals[0];
    if (file !== undefined) {
      const abs = path.resolve(io.cwd, file);
      if (!existsSync(abs)) {
        io.stderr.write(`execverify trace: no such file: ${file}\n`);
        return 1;
      }
      if (!statSync(abs).isFile()) {
        io.stderr.write(`execverify trace: not a file: ${file}\n`);
        return 1;
      }
      job.path = abs;
      job.cwd = path.dirname(abs);
    }
    if (typeof values.entry === 'string') job.entry = { kind: 'call', expr: values.entry };
    else if (values.script) job.entry = { kind: 'script', args: [...((values.args as string[] | undefined) ?? []), ...positionals.slice(1)] };
    else job.entry = { kind: 'function', target: String(values.function), args: String(values['call-args'] ?? '') };
    if (job.entry.kind !== 'script' && values.args !== undefined) throw new UsageError('--args only goes with --script');
    if (values.backend) job.backend = values.backend as 'monitoring' | 'settrace';
    if (typeof values.stdin === 'string') {
      const input = readStdinFile(path.resolve(io.cwd, values.stdin));
      if (!input.ok) {
        io.stderr.write(`execverify trace: --stdin ${values.stdin}: ${input.error}\n`);
        return 1;
      }
      job.stdin = input.text;
    }

    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    if (values.via !== undefined) return traceThroughDebugger(String(values.via), job, python, values.json === true, io);
    const pool = new TracerPool({ python, size: 1, env: io.env });
    try {
      return await printTrace(() => pool.trace(job, io.signal), values.json === true, io);
    } finally {
      await pool.close();
    }
  },
};

/** `--via debugpy` / `--via lldb` (a C file): the job recorded by driving a debugger over DAP (src/engine/dap/). */
async function traceThroughDebugger(via: string, job: TraceJob, python: string, json: boolean, io: CliIO): Promise<number> {
  if (via === 'lldb') return traceThroughLldb(job, json, io);
  if (via !== 'debugpy') throw new UsageError(`--via must be debugpy or lldb, not '${via}'`);
  if (job.entry.kind !== 'call' || job.path === undefined) throw new UsageError('--via debugpy records a call: give FILE and --entry "f(1, 2)"');
  if (job.stdin !== undefined || job.backend !== undefined) throw new UsageError('--via debugpy takes neither --stdin nor --backend');
  const { path: file, entry } = job;
  return printTrace(() => traceViaDebugpy({ path: file, expr: entry.expr, python, env: io.env, limits: job.limits }, io.signal), json, io);
}

/** `--via lldb`: a C program compiled with gcc -g -O0, its main stepped through lldb's DAP server. */
async function traceThroughLldb(job: TraceJob, json: boolean, io: CliIO): Promise<number> {
  if (job.path === undefined || job.entry.kind !== 'call' || !/^main(?:\(\))?$/.test(job.entry.expr.trim())) {
    throw new UsageError('--via lldb records a C program from its main: give FILE.c and --entry main');
  }
  if (job.backend !== undefined) throw new UsageError('--via lldb takes no --backend');
  const file = job.path;
  return printTrace(() => traceViaLldb({ path: file, env: io.env, stdin: job.stdin, limits: job.limits }, io.signal), json, io);
}

/** Prints the trace `record` makes, readable or as JSON; a TracerError is one line and exit 1 (130 when cancelled). */
async function printTrace(record: () => Promise<Trace>, json: boolean, io: CliIO): Promise<number> {
  try {
    const trace = await record();
    io.stdout.write(json ? JSON.stringify(trace) + '\n' : renderTrace(trace));
    return 0;
  } catch (err) {
    if (err instanceof TracerError) {
      io.stderr.write(`execverify trace: ${err.code === 'cancelled' ? 'cancelled' : err.message}\n`);
      return err.code === 'cancelled' ? 130 : 1;
    }
    throw err;
  }
}

/** The file a run reads as its standard input: UTF-8 text (the trace records it as text). */
function readStdinFile(file: string): { ok: true; text: string } | { ok: false; error: string } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    return { ok: false, error: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String((err as Error).message) };
  }
  try {
    return { ok: true, text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    return { ok: false, error: 'not UTF-8 text (standard input is given as text)' };
  }
}

function show(v: Value | undefined): string {
  if (!v) return '?';
  const r = v.repr.length > 80 ? v.repr.slice(0, 77) + '...' : v.repr;
  return v.literal || v.type === 'str' ? r : `${r} (${v.type})`;
}

/** The readable trace: one line per step, indented by call depth. */
export function renderTrace(trace: Trace): string {
  const out: string[] = [];
  const entry = trace.entry.kind === 'call' ? trace.entry.expr : trace.entry.kind === 'script' ? 'script' : `${trace.entry.target}(${trace.entry.args})`;
  const runtime = trace.python
    ? `Python ${trace.python.version} (${trace.python.backend})`
    : `C (${trace.runtime?.compiler ?? '?'}, through ${trace.runtime?.debugger ?? '?'})`;
  out.push(`${TRACE_SCHEMA_VERSION}: ${entry} in ${trace.files[0]?.path ?? '?'} — ${runtime}`);
  const sources = trace.files.map((f) => f.source.split('\n'));
  for (const s of trace.steps) {
    const indent = '  '.repeat(Math.min(s.depth, 20));
    const text = (sources[s.file]?.[s.line - 1] ?? '').trim();
    let what = '';
    if (s.event === 'call') what = `call ${s.fn}${s.resumed ? ' (resumed)' : ''}`;
    else if (s.event === 'line') what = `${String(s.line).padStart(4)}  ${text}`;
    else if (s.event === 'return') what = `${s.yielded ? 'yield' : 'return'} ${s.fn}${s.value ? ' → ' + show(s.value) : ' (unwinding)'}`;
    else what = `raise ${s.exc?.type ?? '?'}: ${s.exc?.message ?? ''}`;
    const changes = [...Object.entries(s.set ?? {}).map(([k, v]) => `${k}=${show(v)}`), ...(s.del ?? []).map((k) => `del ${k}`)];
    out.push(`${String(s.i).padStart(5)} ${indent}${what}${changes.length ? `    | ${changes.join(', ')}` : ''}`);
  }
  const o = trace.outcome;
  if (o.kind === 'returned') out.push(`returned ${show(o.value)}`);
  else if (o.kind === 'raised') out.push(`raised ${o.type}: ${o.message}${o.line !== null ? ` (line ${o.line})` : ''}`);
  else if (o.kind === 'exited') out.push(`exited with code ${o.code}`);
  else if (o.kind === 'limit') out.push(`stopped by the ${o.limit} limit: ${o.message}`);
  else out.push(`crashed: ${o.message}`);
  if (trace.stdout.text) out.push(`stdout${trace.stdout.truncated ? ' (truncated)' : ''}:\n${trace.stdout.text.replace(/\n$/, '')}`);
  if (trace.stderr.text) out.push(`stderr${trace.stderr.truncated ? ' (truncated)' : ''}:\n${trace.stderr.text.replace(/\n$/, '')}`);
  out.push(`${trace.stats.events} events in ${trace.stats.wallMs.toFixed(1)} ms`);
  return out.join('\n') + '\n';
}
