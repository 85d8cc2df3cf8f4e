// parseTrace: TraceSchema's checks, fast enough for million-step traces.
//
// zod validates the envelope (header, files, outcome, streams, stats); the
// steps — the bulk — are checked by a hand-written validator that accepts
// exactly what StepSchema accepts (test/unit/trace-validate.test.ts holds
// the two side by side). zod's recursive ValueSchema costs tens of
// microseconds per value, which made validation slower than tracing.
import { z } from 'zod';
import {
  EventKindSchema,
  IsolationSchema,
  LimitKindSchema,
  TRACE_SCHEMA_VERSION,
  TraceShapeSchema,
  traceInconsistency,
  type Step,
  type Trace,
  type Value,
} from './schema';

const EnvelopeSchema = TraceShapeSchema.omit({ steps: true }).extend({ steps: z.array(z.unknown()) });
const EVENTS = new Set<string>(EventKindSchema.options);
const ISOLATIONS = new Set<string>(IsolationSchema.options);
const LIMITS = new Set<string>(LimitKindSchema.options);

export class TraceFormatError extends Error {
  constructor(
    readonly path: string,
    expected: string,
  ) {
    super(`${path}: expected ${expected}`);
    this.name = 'TraceFormatError';
  }
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function checkValue(v: unknown, path: string): void {
  if (!isObj(v)) throw new TraceFormatError(path, 'a value object');
  if (typeof v.repr !== 'string') throw new TraceFormatError(`${path}.repr`, 'string');
  if (typeof v.type !== 'string') throw new TraceFormatError(`${path}.type`, 'string');
  if (typeof v.literal !== 'boolean') throw new TraceFormatError(`${path}.literal`, 'boolean');
  if (v.truncated !== undefined && typeof v.truncated !== 'boolean') throw new TraceFormatError(`${path}.truncated`, 'boolean');
  if (v.len !== undefined && !(isInt(v.len) && v.len >= 0)) throw new TraceFormatError(`${path}.len`, 'a non-negative integer');
  if (v.items !== undefined) {
    if (!Array.isArray(v.items)) throw new TraceFormatError(`${path}.items`, 'array');
    for (let k = 0; k < v.items.length; k++) checkValue(v.items[k], `${path}.items[${k}]`);
  }
  if (v.entries !== undefined) {
    if (!Array.isArray(v.entries)) throw new TraceFormatError(`${path}.entries`, 'array');
    for (let k = 0; k < v.entries.length; k++) {
      const e = v.entries[k] as unknown;
      if (!Array.isArray(e) || e.length !== 2) throw new TraceFormatError(`${path}.entries[${k}]`, 'a [key, value] pair');
      checkValue(e[0], `${path}.entries[${k}][0]`);
      checkValue(e[1], `${path}.entries[${k}][1]`);
    }
  }
  if (v.attrs !== undefined) {
    if (!isObj(v.attrs)) throw new TraceFormatError(`${path}.attrs`, 'object');
    for (const k in v.attrs) checkValue(v.attrs[k], `${path}.attrs.${k}`);
  }
}

function checkStep(s: unknown, path: string): void {
  if (!isObj(s)) throw new TraceFormatError(path, 'a step object');
  if (!(isInt(s.i) && s.i >= 0)) throw new TraceFormatError(`${path}.i`, 'a non-negative integer');
  if (typeof s.event !== 'string' || !EVENTS.has(s.event)) throw new TraceFormatError(`${path}.event`, 'call | line | return | exception');
  if (!(isInt(s.frame) && s.frame >= 0)) throw new TraceFormatError(`${path}.frame`, 'a non-negative integer');
  if (s.parent !== undefined && s.parent !== null && !(isInt(s.parent) && s.parent >= 0)) {
    throw new TraceFormatError(`${path}.parent`, 'a frame id or null');
  }
  if (typeof s.fn !== 'string') throw new TraceFormatError(`${path}.fn`, 'string');
  if (!(isInt(s.file) && s.file >= 0)) throw new TraceFormatError(`${path}.file`, 'a non-negative integer');
  if (!isInt(s.line)) throw new TraceFormatError(`${path}.line`, 'integer');
  if (!(isInt(s.depth) && s.depth >= 0)) throw new TraceFormatError(`${path}.depth`, 'a non-negative integer');
  if (s.set !== undefined) {
    if (!isObj(s.set)) throw new TraceFormatError(`${path}.set`, 'object');
    for (const k in s.set) checkValue(s.set[k], `${path}.set.${k}`);
  }
  if (s.del !== undefined) {
    if (!Array.isArray(s.del) || !s.del.every((x) => typeof x === 'string')) throw new TraceFormatError(`${path}.del`, 'array of names');
  }
  if (s.resumed !== undefined && typeof s.resumed !== 'boolean') throw new TraceFormatError(`${path}.resumed`, 'boolean');
  if (s.yielded !== undefined && typeof s.yielded !== 'boolean') throw new TraceFormatError(`${path}.yielded`, 'boolean');
  if (s.value !== undefined) checkValue(s.value, `${path}.value`);
  if (s.exc !== undefined) {
    if (!isObj(s.exc) || typeof s.exc.type !== 'string' || typeof s.exc.message !== 'string') {
      throw new TraceFormatError(`${path}.exc`, '{type, message}');
    }
  }
}

function str(o: Record<string, unknown>, k: string, path: string): void {
  if (typeof o[k] !== 'string') throw new TraceFormatError(`${path}.${k}`, 'string');
}

function nonNeg(o: Record<string, unknown>, k: string, path: string, optional = false): void {
  const v = o[k];
  if (optional && v === undefined) return;
  if (typeof v !== 'number' || !(v >= 0)) throw new TraceFormatError(`${path}.${k}`, 'a non-negative number');
}

/** The envelope by hand (the common, valid case); zod names the problem otherwise. */
function envelopeLooksValid(raw: unknown): boolean {
  try {
    if (!isObj(raw)) return false;
    if (raw.schema !== TRACE_SCHEMA_VERSION) return false;
    const py = raw.python;
    if (!isObj(py) || typeof py.version !== 'string' || typeof py.implementation !== 'string') return false;
    if (py.backend !== 'monitoring' && py.backend !== 'settrace') return false;
    if (py.isolation !== undefined && !(typeof py.isolation === 'string' && ISOLATIONS.has(py.isolation))) return false;
    const e = raw.entry;
    if (!isObj(e)) return false;
    if (e.kind === 'call') str(e, 'expr', 'entry');
    else if (e.kind === 'script') {
      if (!Array.isArray(e.args) || !e.args.every((a) => typeof a === 'string')) return false;
    } else if (e.kind === 'function') {
      str(e, 'target', 'entry');
      str(e, 'args', 'entry');
    } else return false;
    if (!Array.isArray(raw.files) || raw.files.length === 0) return false;
    for (const f of raw.files) {
      if (!isObj(f) || typeof f.path !== 'string' || typeof f.source !== 'string') return false;
    }
    if (!Array.isArray(raw.steps)) return false;
    const o = raw.outcome;
    if (!isObj(o)) return false;
    if (o.kind === 'returned') checkValue(o.value, 'outcome.value');
    else if (o.kind === 'raised') {
      str(o, 'type', 'outcome');
      str(o, 'message', 'outcome');
      if (o.line !== null && !isInt(o.line)) return false;
      if (o.file !== undefined && o.file !== null && !(isInt(o.file) && o.file >= 0)) return false;
    } else if (o.kind === 'exited') {
      if (!isInt(o.code)) return false;
    } else if (o.kind === 'limit') {
      if (typeof o.limit !== 'string' || !LIMITS.has(o.limit)) return false;
      str(o, 'message', 'outcome');
    } else if (o.kind === 'tampered') {
      str(o, 'message', 'outcome');
    } else if (o.kind === 'crashed') {
      str(o, 'message', 'outcome');
      if (o.exitCode !== null && !isInt(o.exitCode)) return false;
      if (o.signal !== null && typeof o.signal !== 'string') return false;
    } else return false;
    for (const k of ['stdout', 'stderr']) {
      const st = raw[k];
      if (!isObj(st) || typeof st.text !== 'string' || typeof st.truncated !== 'boolean') return false;
    }
    const stats = raw.stats;
    if (!isObj(stats) || !(isInt(stats.events) && stats.events >= 0)) return false;
    nonNeg(stats, 'wallMs', 'stats');
    nonNeg(stats, 'cpuMs', 'stats', true);
    nonNeg(stats, 'peakMemoryKb', 'stats', true);
    return true;
  } catch {
    return false;
  }
}

/**
 * Validates a parsed JSON trace; returns it typed. Throws TraceFormatError
 * (or a ZodError for the envelope) naming the first bad field.
 */
export function parseTrace(raw: unknown): Trace {
  // The hand check only accepts what the schema accepts; anything it doubts
  // goes through zod, which accepts or explains.
  const env = envelopeLooksValid(raw) ? (raw as z.infer<typeof EnvelopeSchema>) : EnvelopeSchema.parse(raw);
  const steps = env.steps;
  for (let i = 0; i < steps.length; i++) checkStep(steps[i], `steps[${i}]`);
  const trace = { ...env, steps: steps as Step[] };
  const problem = traceInconsistency(trace);
  if (problem) throw new TraceFormatError(problem.path.map((p, k) => (typeof p === 'number' ? `[${p}]` : k === 0 ? p : `.${p}`)).join(''), problem.expected);
  return trace;
}

/** Like parseTrace, as a result value instead of an exception. */
export function safeParseTrace(raw: unknown): { ok: true; trace: Trace } | { ok: false; error: string } {
  try {
    return { ok: true, trace: parseTrace(raw) };
  } catch (err) {
    if (err instanceof z.ZodError) {
      const issue = err.issues[0];
      return { ok: false, error: issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid' };
    }
    return { ok: false, error: (err as Error).message };
  }
}

export type { Value };
