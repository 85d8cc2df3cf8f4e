// The `execverify` launch configuration: one zod schema, checked when a
// session launches, with messages that say which attribute to fix.
import * as path from 'node:path';
import { z } from 'zod';
import { LimitsSchema, type Entry, type Limits } from '../engine/trace/schema';

export const LaunchConfigSchema = z
  .object({
    /** The Python file to record. */
    program: z.string().min(1, 'must be a path to a Python file').optional(),
    /** A call expression evaluated in the program's module, e.g. `f([1, 2], 3)`. Without it the program runs as a script. */
    entry: z.string().min(1, 'must be a call expression such as f([1, 2], 3)').optional(),
    /** Run the program as `__main__` (the default when there is no `entry`). */
    script: z.boolean().optional(),
    /** sys.argv[1:] for a script. */
    args: z.array(z.string()).optional(),
    cwd: z.string().optional(),
    env: z.record(z.string()).optional(),
    /** The Python interpreter; found automatically when absent. */
    python: z.string().optional(),
    limits: LimitsSchema.optional(),
    stopOnEntry: z.boolean().optional(),
    /** Replay an already recorded trace (JSON) instead of recording: nothing is run. */
    traceFile: z.string().min(1).optional(),
    /** Record through a debugger over DAP instead of the in-process tracer (docs/live-debugging.md). */
    via: z.enum(['debugpy']).optional(),
  })
  .superRefine((c, ctx) => {
    if (!c.program && !c.traceFile) {
      ctx.addIssue({ code: 'custom', path: ['program'], message: 'is required: the Python file to record (or set "traceFile" to replay a recorded trace)' });
    }
    if (c.entry && c.script) {
      ctx.addIssue({ code: 'custom', path: ['entry'], message: 'cannot be combined with "script": true; use one of them' });
    }
    if (c.via && !c.entry) {
      ctx.addIssue({ code: 'custom', path: ['via'], message: 'records a call: set "entry" too, e.g. "f([1, 2], 3)"' });
    }
    if (c.entry && c.args?.length) {
      ctx.addIssue({ code: 'custom', path: ['args'], message: 'are for scripts; put the arguments into the "entry" call expression instead' });
    }
  });
export type LaunchConfig = z.infer<typeof LaunchConfigSchema>;

/** What the adapter asks the recorder to run. */
export interface RecordRequest {
  /** Absolute path of the program. */
  program: string;
  entry: Entry;
  cwd: string;
  env?: Record<string, string>;
  python?: string;
  limits?: Limits;
  /** Record through this debugger over DAP (src/engine/dap/) rather than the in-process tracer. */
  via?: 'debugpy';
}

/** Validates raw launch arguments; errors are one readable line per problem. */
export function parseLaunchConfig(raw: unknown): { ok: true; config: LaunchConfig } | { ok: false; message: string } {
  const parsed = LaunchConfigSchema.safeParse(raw);
  if (parsed.success) return { ok: true, config: parsed.data };
  const lines = parsed.error.issues.map((i) => `  "${i.path.join('.') || 'configuration'}" ${i.message}`);
  return { ok: false, message: `The launch configuration is not valid:\n${lines.join('\n')}` };
}

/** The record request for a validated config, resolving paths against `cwd` (or the program's folder). */
export function toRecordRequest(config: LaunchConfig, baseDir: string): RecordRequest {
  const configuredCwd = config.cwd !== undefined ? path.resolve(baseDir, config.cwd) : undefined;
  const program = path.resolve(configuredCwd ?? baseDir, config.program!);
  const cwd = configuredCwd ?? path.dirname(program);
  const entry: Entry = config.entry ? { kind: 'call', expr: config.entry } : { kind: 'script', args: config.args ?? [] };
  return {
    program,
    entry,
    cwd,
    ...(config.env ? { env: config.env } : {}),
    ...(config.python ? { python: config.python } : {}),
    ...(config.limits ? { limits: config.limits } : {}),
    ...(config.via ? { via: config.via } : {}),
  };
}
