// The environments the engine's child processes start with: an allow-list of
// what they need to run, never the parent's whole environment, so API keys,
// tokens and editor variables reach no traced program, test suite or git.

/**
 * HOME for processes that run code: a path that does not exist and cannot be
 * created by an unprivileged user (Debian's home for `nobody`). Reads of
 * `~/.something` find nothing, writes fail loudly, and no state is shared
 * between jobs through a home directory. A user-site directory under the real
 * HOME (`pip install --user`) is not seen either.
 */
export const NEUTRAL_HOME = '/nonexistent';

/** Locale and time-zone settings: they change how a program formats text, never a secret. */
const LOCALE = /^(?:LANG|LANGUAGE|LC_[A-Z]+|TZ)$/;

/** Windows cannot start a CPython (or git) without these; none holds a secret. */
const WINDOWS = ['SYSTEMROOT', 'SystemRoot', 'WINDIR', 'windir', 'COMSPEC', 'ComSpec', 'PATHEXT', 'TEMP', 'TMP'];

/**
 * The least a process needs from `parent`: PATH, the locale, the time zone and
 * the temporary directory (TMPDIR; TEMP/TMP with the system root on Windows).
 * Everything else is left behind, whatever its name.
 */
export function minimalEnv(parent: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): Record<string, string> {
  const env: Record<string, string> = {};
  const keep = (name: string) => {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  };
  // Windows spells PATH as Path; Node's env lookup there is case-insensitive, a plain object is not.
  const pathName = Object.keys(parent).find((k) => k.toUpperCase() === 'PATH') ?? 'PATH';
  keep(pathName);
  keep('TMPDIR');
  for (const name of Object.keys(parent)) if (LOCALE.test(name)) keep(name);
  if (platform === 'win32') for (const name of WINDOWS) keep(name);
  return env;
}

/**
 * The environment of a process that runs Python code (the tracer worker and
 * the programs it traces, a harvested project's tests): the minimal one, a
 * neutral HOME, and `given` — what the user explicitly set for the program
 * (a launch configuration's `env`, `harvest --pass-env`) — on top.
 */
export function codeEnv(
  parent: NodeJS.ProcessEnv,
  given: Readonly<Record<string, string>> = {},
  platform: NodeJS.Platform = process.platform,
): Record<string, string> {
  // Windows: without USERPROFILE/HOMEDRIVE, expanduser('~') stays '~' (neutral too).
  return { ...minimalEnv(parent, platform), ...(platform === 'win32' ? {} : { HOME: NEUTRAL_HOME }), ...given };
}

/**
 * git's environment for the read-only provenance calls: the minimal one, the
 * real HOME (so the user's ~/.gitconfig, `safe.directory` included, applies;
 * git is trusted, the project is not asked anything), and never a prompt.
 */
export function gitEnv(parent: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): Record<string, string> {
  const env: Record<string, string> = { ...minimalEnv(parent, platform), GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0' };
  for (const name of platform === 'win32' ? ['USERPROFILE', 'HOMEDRIVE', 'HOMEPATH', 'HOME'] : ['HOME', 'XDG_CONFIG_HOME']) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}
