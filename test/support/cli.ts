// The CLI run in-process through main(), its stdout and stderr collected as
// text: the one way CLI tests call `execverify …`, so they all see it alike.
import { PassThrough } from 'node:stream';
import type { CliIO } from '../../src/cli/command';
import { main } from '../../src/cli/main';

/** process.env as it is now with no model server configured, so a run uses only the --base-url/--model it is given. */
export function noModelEnv(): NodeJS.ProcessEnv {
  return { ...process.env, EXECVERIFY_BASE_URL: '', EXECVERIFY_MODEL: '' };
}

/** A CliIO rooted at `cwd` whose output `text()` reads back. */
export function capturedIO(cwd: string, env: NodeJS.ProcessEnv = process.env): { io: CliIO; text(): { stdout: string; stderr: string } } {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += d));
  err.on('data', (d) => (stderr += d));
  return { io: { stdout: out, stderr: err, env, cwd, signal: new AbortController().signal }, text: () => ({ stdout, stderr }) };
}

/** Runs `execverify ...argv` in `cwd`; its exit code and what it printed. */
export async function runCli(argv: string[], at: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number; out: string; err: string }> {
  const h = capturedIO(at.cwd, at.env);
  const code = await main(argv, h.io);
  const { stdout, stderr } = h.text();
  return { code, out: stdout, err: stderr };
}
