// `execverify serve-reward`: the reward over HTTP for trainers in another process
// or on another node (OpenRLHF's --reward.remote_url, slime's --rm-url). The
// server is Python (python -m execverify.reward_server): the reward is
// reward.py's, judged in its sandboxed workers, so this command only starts it,
// passes the token out of the command line, and stops it gracefully.
// See docs/rewards-for-trainers.md.
import { spawn } from 'node:child_process';
import { UsageError, type Command } from '../command';
import { pythonTracerDir, resolvePython, workerEnv } from '../../engine/python';

const TOKEN_ENV = 'EXECVERIFY_REWARD_TOKEN';

/** Flags passed on to the Python server as they are (it validates them: one place). */
const FORWARDED = ['host', 'port', 'workers', 'queue', 'max-body', 'max-batch', 'max-connections'] as const;

export const serveRewardCommand: Command = {
  name: 'serve-reward',
  summary:
    'Serve rewards over HTTP: POST /get_reward (OpenRLHF), POST /reward (slime), GET /health, GET /metrics (Prometheus). Loopback by default; any other --host needs a token.',
  usage:
    'execverify serve-reward [--host 127.0.0.1] [--port 5000] [--token T | EXECVERIFY_REWARD_TOKEN=T] [--workers N] [--queue N] ' +
    '[--max-body BYTES] [--max-batch N] [--max-connections N] [--python PATH] [--quiet]',
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    token: { type: 'string' },
    workers: { type: 'string' },
    queue: { type: 'string' },
    'max-body': { type: 'string' },
    'max-batch': { type: 'string' },
    'max-connections': { type: 'string' },
    python: { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
  },
  async run(values, positionals, io) {
    if (positionals.length) throw new UsageError(`serve-reward takes no positional arguments (got '${positionals[0]}')`);
    const args = ['-m', 'execverify.reward_server'];
    for (const flag of FORWARDED) {
      if (values[flag] !== undefined) args.push(`--${flag}`, String(values[flag]));
    }
    if (values.quiet) args.push('--quiet');
    const env = workerEnv(io.env, pythonTracerDir());
    // The token travels in the environment, never on a command line (ps shows those to every user).
    const token = typeof values.token === 'string' ? values.token : io.env[TOKEN_ENV];
    if (token !== undefined) env[TOKEN_ENV] = token;
    env.EXECVERIFY_REWARD_EXIT_WITH_PARENT = String(process.pid); // the server stops when this process dies, however it dies
    const python = resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env);
    const child = spawn(python, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(io.stdout, { end: false });
    child.stderr.pipe(io.stderr, { end: false });
    const stop = () => {
      if (child.exitCode === null) child.kill('SIGTERM'); // the server finishes its requests in flight
    };
    io.signal.addEventListener('abort', stop, { once: true });
    process.on('SIGTERM', stop);
    try {
      return await new Promise<number>((resolve, reject) => {
        child.once('error', (err) => reject(new Error(`cannot start ${python}: ${err.message} (set --python or EXECVERIFY_PYTHON)`)));
        child.once('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
      });
    } finally {
      io.signal.removeEventListener('abort', stop);
      process.off('SIGTERM', stop);
    }
  },
};
