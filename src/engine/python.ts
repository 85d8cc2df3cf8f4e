// Where the Python interpreter and the python-tracer package are found.
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The interpreter to run: the configured setting, else EXECVERIFY_PYTHON,
 * else `python3` from PATH. Blank values count as unset.
 */
export function resolvePython(configured: string | undefined, env: NodeJS.ProcessEnv): string {
  const setting = configured?.trim();
  if (setting) return setting;
  const fromEnv = env.EXECVERIFY_PYTHON?.trim();
  if (fromEnv) return fromEnv;
  return 'python3';
}

/**
 * The python-tracer directory (the one holding `execverify/`), found by
 * walking up from `start`: works from src/engine under tsx, from the dist/
 * bundles, and from an installed extension (which ships python-tracer/).
 */
export function pythonTracerDir(start: string = __dirname, exists: (p: string) => boolean = existsSync): string {
  let dir = path.resolve(start);
  for (;;) {
    const candidate = path.join(dir, 'python-tracer');
    if (exists(path.join(candidate, 'execverify', 'worker.py'))) return candidate;
    const up = path.dirname(dir);
    if (up === dir) {
      throw new Error(
        `python-tracer/ not found above ${start}: reinstall ExecVerify, or run from a checkout that has python-tracer/execverify/`,
      );
    }
    dir = up;
  }
}

/** The environment a worker runs with: the tracer importable, output unbuffered. */
export function workerEnv(env: NodeJS.ProcessEnv, tracerDir: string): NodeJS.ProcessEnv {
  const sep = path.delimiter;
  return {
    ...env,
    PYTHONPATH: env.PYTHONPATH ? `${tracerDir}${sep}${env.PYTHONPATH}` : tracerDir,
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONIOENCODING: 'utf-8',
  };
}
