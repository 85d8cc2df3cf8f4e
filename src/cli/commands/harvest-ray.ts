// `execverify harvest --executor ray [--address ADDR] PROJECT... --out DIR`: the
// same harvest of each project, as Ray tasks (python -m execverify.ray_harvest,
// which runs this CLI's `harvest` per project on the workers and merges the
// shards into DIR). Every other harvest flag goes to each project's harvest as
// given. See docs/scale.md.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { UsageError, type CliIO } from '../command';
import { pythonTracerDir, resolvePython } from '../../engine/python';

/** Flags of the driver itself; everything else is a flag of each project's harvest. */
const DRIVER_FLAGS = new Set(['out', 'executor', 'address', 'quiet', 'json']);

export async function harvestOnRay(values: Record<string, unknown>, positionals: string[], io: CliIO): Promise<number> {
  if (positionals.length === 0) throw new UsageError('give one or more PROJECT directories (or one file listing them)');
  if (typeof values.out !== 'string') throw new UsageError('--out DIR is required (the merged store)');
  const args = ['-m', 'execverify.ray_harvest', '--out', path.resolve(io.cwd, values.out)];
  if (typeof values.address === 'string') args.push('--address', values.address);
  args.push(...positionals.map((p) => path.resolve(io.cwd, p)), '--');
  for (const [flag, value] of Object.entries(values)) {
    if (DRIVER_FLAGS.has(flag) || value === undefined || value === false) continue;
    for (const v of Array.isArray(value) ? value : [value]) args.push(`--${flag}`, ...(v === true ? [] : [String(v)]));
  }
  return runRayDriver(args, io);
}

/** `python -m execverify.ray_<driver> ARGS`, its output streamed; a cancel ends it. Shared by harvest and synthesize. */
export async function runRayDriver(args: string[], io: CliIO): Promise<number> {
  // The driver needs Ray: EXECVERIFY_RAY_PYTHON names an interpreter that has it.
  const python = io.env.EXECVERIFY_RAY_PYTHON?.trim() || resolvePython(undefined, io.env);
  const tracer = pythonTracerDir();
  const env = { ...io.env, PYTHONPATH: io.env.PYTHONPATH ? `${tracer}${path.delimiter}${io.env.PYTHONPATH}` : tracer };
  const child = spawn(python, args, { env, cwd: io.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(io.stdout, { end: false });
  child.stderr.pipe(io.stderr, { end: false });
  const stop = () => child.exitCode === null && child.kill('SIGTERM');
  io.signal.addEventListener('abort', stop, { once: true });
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', (err) => reject(new Error(`cannot start ${python}: ${err.message} (set EXECVERIFY_RAY_PYTHON to a Python with Ray)`)));
      child.once('close', (code) => resolve(code ?? 1));
    });
  } finally {
    io.signal.removeEventListener('abort', stop);
  }
}
