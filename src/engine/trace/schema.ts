// The Trace: the recorded run of one entry under the Python interpreter.
// This zod schema is the one definition of the wire format written by
// python-tracer (see docs/trace-format.md); every reader validates with it.
import { z } from 'zod';

export const TRACE_SCHEMA_VERSION = 'execverify.trace/1';

/** A captured Python value. `repr` is bounded; truncation is always marked. */
export interface Value {
  repr: string;
  /** `type(v).__name__` for builtins, `module.Qualname` otherwise. */
  type: string;
  /** `ast.literal_eval(repr) == v` held when the value was captured. */
  literal: boolean;
  /**
   * The repr is not the exact repr of the value: cut at a bound (marked with a
   * trailing "..."), or a placeholder for a repr that failed or a huge int.
   * Children lists are bounded on their own: compare items/entries with `len`.
   */
  truncated?: boolean;
  /** len() of a container, when it has one. */
  len?: number;
  /** Elements of a list / tuple / set / frozenset / deque (bounded, in order). */
  items?: Value[];
  /** Key/value pairs of a dict / mapping (bounded, in order). */
  entries?: [Value, Value][];
  /** Attributes of an instance (`__dict__` / `__slots__`), bounded. */
  attrs?: Record<string, Value>;
}

export const ValueSchema: z.ZodType<Value> = z.lazy(() =>
  z.object({
    repr: z.string(),
    type: z.string(),
    literal: z.boolean(),
    truncated: z.boolean().optional(),
    len: z.number().int().nonnegative().optional(),
    items: z.array(ValueSchema).optional(),
    entries: z.array(z.tuple([ValueSchema, ValueSchema])).optional(),
    attrs: z.record(ValueSchema).optional(),
  }),
);

export const EventKindSchema = z.enum(['call', 'line', 'return', 'exception']);
export type EventKind = z.infer<typeof EventKindSchema>;

/**
 * One event as written on the wire. Locals travel as a diff against the
 * previous event of the same frame: `set` holds new or changed names, `del`
 * names that disappeared. A `call` event that starts a frame carries all of
 * its locals in `set`. Use `decodeTrace` to get full locals per step.
 */
export const StepSchema = z.object({
  /** Index of this event in the trace, 0-based and dense. */
  i: z.number().int().nonnegative(),
  event: EventKindSchema,
  /** Frame id, stable for the frame's whole life (also across generator suspensions). */
  frame: z.number().int().nonnegative(),
  /** Frame id of the caller if it is traced, else null. Set on `call` events. */
  parent: z.number().int().nonnegative().nullable().optional(),
  /** `co_qualname` where available (3.11+), else `co_name`. */
  fn: z.string(),
  /** Index into Trace.files. */
  file: z.number().int().nonnegative(),
  line: z.number().int(),
  /** Number of traced frames below this one on the stack (entry frame: 0). */
  depth: z.number().int().nonnegative(),
  set: z.record(ValueSchema).optional(),
  del: z.array(z.string()).optional(),
  /** `call`: true when a generator / coroutine frame resumes rather than starts. */
  resumed: z.boolean().optional(),
  /** `return`: the returned (or yielded) value. */
  value: ValueSchema.optional(),
  /** `return`: true when the frame suspends at a yield / await instead of finishing. */
  yielded: z.boolean().optional(),
  /** `exception`: the exception raised inside this frame. */
  exc: z.object({ type: z.string(), message: z.string() }).optional(),
});
export type Step = z.infer<typeof StepSchema>;

export const LimitKindSchema = z.enum(['steps', 'wall_time', 'cpu_time', 'memory', 'output', 'recursion', 'trace_size', 'stdin', 'fork']);
export type LimitKind = z.infer<typeof LimitKindSchema>;

export const OutcomeSchema = z.discriminatedUnion('kind', [
  /** The entry call returned (a script that ran to its end returns None). */
  z.object({ kind: z.literal('returned'), value: ValueSchema }),
  /** The entry raised. `line` is where it was raised in traced code, if known. */
  z.object({
    kind: z.literal('raised'),
    type: z.string(),
    message: z.string(),
    line: z.number().int().nullable(),
    file: z.number().int().nonnegative().nullable().optional(),
  }),
  /** A script called sys.exit(code). */
  z.object({ kind: z.literal('exited'), code: z.number().int() }),
  /** A limit stopped the run; the steps recorded before it are kept. */
  z.object({ kind: z.literal('limit'), limit: LimitKindSchema, message: z.string() }),
  /**
   * The traced program tampered with the tracer (forged its messages, turned
   * its events off): the steps cannot be trusted, so none are kept.
   */
  z.object({ kind: z.literal('tampered'), message: z.string() }),
  /** The interpreter died (os._exit, a segfault, killed) before reporting. */
  z.object({
    kind: z.literal('crashed'),
    message: z.string(),
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
  }),
]);
export type Outcome = z.infer<typeof OutcomeSchema>;

export const CapturedStreamSchema = z.object({ text: z.string(), truncated: z.boolean() });

export const EntrySchema = z.discriminatedUnion('kind', [
  /** A call expression evaluated in the module's namespace, e.g. `f([1, 2], 3)`. */
  z.object({ kind: z.literal('call'), expr: z.string() }),
  /** The file run as `__main__`, with sys.argv[1:] = args. */
  z.object({ kind: z.literal('script'), args: z.array(z.string()).default([]) }),
  /** `module:function` called with the given argument source, e.g. `pkg.mod:f` + `[1], 2`. */
  z.object({ kind: z.literal('function'), target: z.string(), args: z.string().default('') }),
]);
export type Entry = z.infer<typeof EntrySchema>;

export const TraceFileSchema = z.object({
  path: z.string(),
  /** The exact source that ran; line numbers refer to it. */
  source: z.string(),
});

/** The shapes of a trace's fields; TraceSchema adds the rules between them. */
/**
 * How a traced run was isolated (docs/security.md): the OS sandbox and the
 * job's seccomp filter, the filter alone, or nothing; `+shared`: the job ran
 * in a child shared with other jobs its static check proved shareable
 * (python-tracer/execverify/shareable.py), each with a fresh module.
 */
export const IsolationSchema = z.enum(['bubblewrap+seccomp', 'seccomp', 'none', 'bubblewrap+seccomp+shared', 'seccomp+shared', 'none+shared']);

export const TraceShapeSchema = z.object({
  schema: z.literal(TRACE_SCHEMA_VERSION),
  /** The program's language; absent: Python. A C trace has `runtime` in place of `python`. */
  language: z.enum(['python', 'c']).optional(),
  /** C (recorded through a debugger): what compiled the program and what stepped it. */
  runtime: z
    .object({
      /** The compiler's version line, e.g. `gcc (Debian 12.2.0-14) 12.2.0`, and the flags used. */
      compiler: z.string(),
      /** The debug adapter, e.g. `lldb-vscode-14`. */
      debugger: z.string(),
      isolation: z.literal('none'),
    })
    .optional(),
  python: z
    .object({
      version: z.string(),
      implementation: z.string(),
      /** Which hook recorded the run; the decoded trace is the same either way. */
      backend: z.enum(['monitoring', 'settrace']),
      /**
       * How the run was isolated (docs/security.md): the OS sandbox and the
       * job's seccomp filter, the filter alone, or nothing. Absent in traces
       * written before it was recorded.
       */
      isolation: IsolationSchema.optional(),
    })
    .optional(),
  entry: EntrySchema,
  /** The standard input the run was given (the job's `stdin`); absent: none, and a read was limit `stdin`. */
  stdin: z.object({ text: z.string() }).optional(),
  files: z.array(TraceFileSchema).min(1),
  steps: z.array(StepSchema),
  outcome: OutcomeSchema,
  stdout: CapturedStreamSchema,
  stderr: CapturedStreamSchema,
  stats: z.object({
    events: z.number().int().nonnegative(),
    wallMs: z.number().nonnegative(),
    cpuMs: z.number().nonnegative().optional(),
    peakMemoryKb: z.number().nonnegative().optional(),
  }),
});
type TraceShape = z.infer<typeof TraceShapeSchema>;

/**
 * What the shapes alone cannot say, and the comments above do: steps are
 * dense and in order, every file index names a file, lines are not negative,
 * a frame begins with its `call`, and a parent is a frame already begun. A
 * trace from elsewhere is data: one that breaks these is refused, rather than
 * misread by the decoder, the replay debugger or the question generator.
 * Returns the first problem (a path into the trace and what was expected).
 */
export function traceInconsistency(trace: TraceShape): { path: (string | number)[]; expected: string } | undefined {
  if (trace.language === 'c' ? !trace.runtime || trace.python : !trace.python) {
    return trace.language === 'c'
      ? { path: ['runtime'], expected: 'a C trace to have runtime and no python' }
      : { path: ['python'], expected: 'a Python trace to have python' };
  }
  const files = trace.files.length;
  const begun = new Set<number>();
  const steps = trace.steps;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i]!;
    if (s.i !== i) return { path: ['steps', i, 'i'], expected: `${i} (steps are dense and in order; got ${s.i})` };
    if (s.file >= files) return { path: ['steps', i, 'file'], expected: `an index into files (0..${files - 1}); got ${s.file}` };
    if (s.line < 0) return { path: ['steps', i, 'line'], expected: `a line number ≥ 0; got ${s.line}` };
    if (!begun.has(s.frame)) {
      if (s.event !== 'call') return { path: ['steps', i, 'event'], expected: `call (the first event of frame ${s.frame}); got ${s.event}` };
      if (s.parent !== undefined && s.parent !== null && (s.parent === s.frame || !begun.has(s.parent))) {
        return { path: ['steps', i, 'parent'], expected: `a frame begun earlier, or null; got ${s.parent}` };
      }
      begun.add(s.frame);
    }
  }
  const o = trace.outcome;
  if (o.kind === 'raised') {
    if (o.line !== null && o.line < 0) return { path: ['outcome', 'line'], expected: `a line number ≥ 0 or null; got ${o.line}` };
    if (o.file !== undefined && o.file !== null && o.file >= files)
      return { path: ['outcome', 'file'], expected: `an index into files (0..${files - 1}); got ${o.file}` };
  }
  return undefined;
}

export const TraceSchema = TraceShapeSchema.superRefine((trace, ctx) => {
  const problem = traceInconsistency(trace);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: `expected ${problem.expected}` });
});
export type Trace = z.infer<typeof TraceSchema>;

/** Limits for one job; every field has a safe default in the tracer. */
export const LimitsSchema = z.object({
  steps: z.number().int().positive().optional(),
  wallTimeMs: z.number().int().positive().optional(),
  cpuTimeMs: z.number().int().positive().optional(),
  memoryMb: z.number().int().positive().optional(),
  outputBytes: z.number().int().positive().optional(),
  recursionDepth: z.number().int().positive().optional(),
  traceBytes: z.number().int().positive().optional(),
  reprChars: z.number().int().positive().optional(),
  containerItems: z.number().int().positive().optional(),
  /** The most UTF-8 bytes a job's `stdin` may hold (default 8 MiB); more is refused before the run. */
  stdinBytes: z.number().int().positive().optional(),
});
export type Limits = z.infer<typeof LimitsSchema>;
