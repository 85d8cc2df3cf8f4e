// Where the Python interpreter and the python-tracer package are found.
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { codeEnv } from './child-env';

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
      throw new Error(`python-tracer/ not found above ${start}: reinstall ExecVerify, or run from a checkout that has python-tracer/execverify/`);
    }
    dir = up;
  }
}

/**
 * What a worker may need from the parent: where the interpreter's standard
 * library and shared library are (PYTHONHOME, LD_LIBRARY_PATH), which pyenv
 * version a shim picks, how Python hashes (PYTHONHASHSEED), and the user's
 * choices about isolation (EXECVERIFY_SANDBOX=off, EXECVERIFY_ALLOW_UNISOLATED,
 * see python-tracer/execverify/isolation.py; EXECVERIFY_PREFORK=off and
 * EXECVERIFY_SHARE=off, the benchmarks' comparisons). The user's own import path
 * (PYTHONPATH) follows the tracer's.
 */
const WORKER_VARS = [
  'PYTHONHOME',
  'LD_LIBRARY_PATH',
  'PYENV_VERSION',
  'PYENV_ROOT',
  'PYTHONHASHSEED',
  'EXECVERIFY_SANDBOX',
  'EXECVERIFY_ALLOW_UNISOLATED',
  'EXECVERIFY_PREFORK',
  'EXECVERIFY_SHARE',
];

/**
 * The environment a worker (and every program it traces) runs with: the
 * minimal one of child-env.ts, the variables above, the tracer
 * importable, output unbuffered, and `given` — what the user explicitly set
 * for the program — on top. Nothing else of `env` is passed: API keys, tokens
 * and editor variables stay in this process.
 */
export function workerEnv(
  env: NodeJS.ProcessEnv,
  tracerDir: string,
  given: Readonly<Record<string, string>> = {},
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  const sep = platform === 'win32' ? ';' : ':';
  const out = codeEnv(env, {}, platform);
  for (const name of WORKER_VARS) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  const userPath = given.PYTHONPATH ?? env.PYTHONPATH;
  return {
    ...out,
    ...given,
    PYTHONPATH: userPath ? `${tracerDir}${sep}${userPath}` : tracerDir,
    PYTHONUNBUFFERED: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONIOENCODING: 'utf-8',
    // what the programs themselves see (the worker's own variables stay its own)
    EXECVERIFY_JOB_ENV: JSON.stringify(given),
  };
}
