// Deterministic truth for harvested samples (SEMANTICS §7): the hash seed a
// sample runs under, the other runs that must agree with it, code that reads
// the clock, the environment, argv or paths, and local paths in what is stored.
import * as os from 'node:os';
import * as path from 'node:path';

/** PYTHONHASHSEED of the run a sample's truth comes from (recorded in the sample). */
export const DEFAULT_HASH_SEED = 0;
/** The other seeds every truth is confirmed under. */
export const DEFAULT_CHECK_SEEDS: readonly number[] = [1, 2];

/**
 * One traced run of a sample: the primary (its truth), a second run at the same
 * seed in a changed environment (another HOME, working directory and time zone,
 * an extra variable, later on the clock), or a run under another hash seed.
 */
export interface TraceRun {
  hashSeed: number;
  rerun: boolean;
}

/** The environment every run of a sample sees on top of the worker's: one time zone on every machine. */
export const PRIMARY_JOB_ENV: Readonly<Record<string, string>> = { TZ: 'UTC' };
/** The second run's: what a sample must not depend on, changed (26 hours from UTC-12 to UTC+14: another date, always). */
export const RERUN_JOB_ENV: Readonly<Record<string, string>> = {
  TZ: 'Etc/GMT-14',
  HOME: '/nonexistent/execverify-rerun',
  EXECVERIFY_RERUN: '1',
};
/** The primary's working directory is the temporary directory; the second run's is this. */
export const RERUN_CWD = '/';

/** What a drop for moved truth is called, by the run that moved it. */
export function unstableReason(what: 'result' | 'truth', run: TraceRun): string {
  return `unstable_${what}_${run.rerun ? 'rerun' : 'hash_seed'}`;
}

const DEPENDENCE: readonly (readonly [string, RegExp])[] = [
  [
    'reads_clock',
    /\btime\.(?:time|time_ns|monotonic|monotonic_ns|perf_counter|perf_counter_ns|process_time|process_time_ns|thread_time|clock)\s*\(|\btime\.(?:localtime|gmtime|ctime|asctime|strftime)\s*\(\s*(?:\)|['"][^'"]*['"]\s*\))|\b(?:datetime|date)\.(?:now|today|utcnow)\s*\(|\bfrom\s+time\s+import\b[^\n]*\b(?:time|monotonic|perf_counter|process_time)\b/,
  ],
  [
    'reads_environment',
    /\bos\.(?:environ|getenv|getenvb|getpid|getppid|getuid|getgid|getlogin|uname|cpu_count|urandom)\b|\bgetpass\.getuser\b|\bsocket\.gethostname\b|\bplatform\.\w+\s*\(|\buuid\.uuid[14]\s*\(|\bsys\.(?:executable|platform|version|flags|getrecursionlimit)\b/,
  ],
  ['reads_home', /\bexpanduser\s*\(|\bPath\.home\s*\(|\bexpandvars\s*\(/],
  ['reads_argv', /\bsys\.argv\b|\.parse_args\s*\(\s*\)|\bsys\.orig_argv\b/],
  [
    'reads_paths',
    /\bos\.getcwd\s*\(|\bPath\.cwd\s*\(|\b__file__\b|\bos\.path\.(?:abspath|realpath)\s*\(|\.resolve\s*\(\s*\)|\.absolute\s*\(\s*\)|\bsys\.path\b|\btempfile\.|\bos\.listdir\s*\(|\bos\.scandir\s*\(|\bglob\.glob\s*\(/,
  ],
];

/** Code without its comments (a `#` outside a string to the end of the line). */
function withoutComments(code: string): string {
  return code
    .split('\n')
    .map((line) => {
      let quote = '';
      for (let i = 0; i < line.length; i++) {
        const c = line[i]!;
        if (quote) {
          if (c === '\\') i++;
          else if (c === quote) quote = '';
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '#') return line.slice(0, i);
      }
      return line;
    })
    .join('\n');
}

/**
 * Why a sample's values may depend on the machine or the moment it ran
 * (`reads_clock`, `reads_environment`, `reads_home`, `reads_argv`,
 * `reads_paths`), from its code; undefined when nothing such is used. The
 * second run catches what this misses, when its value changes.
 */
export function machineDependence(code: string): string | undefined {
  const text = withoutComments(code);
  for (const [reason, re] of DEPENDENCE) if (re.test(text)) return reason;
  return undefined;
}

/**
 * A finder of the harvesting machine's paths in stored text: the given roots
 * (the project, the tracer, the working directory), the home and temporary
 * directories, the jobs' HOME (`/nonexistent`), and any `/home/<user>/`, `/Users/<user>/` or `C:\Users\<user>\`.
 */
export function localPathFinder(roots: readonly string[], env: NodeJS.ProcessEnv = process.env): (text: string) => string | undefined {
  const known = new Set<string>();
  for (const r of [...roots, os.homedir(), os.tmpdir(), env.HOME ?? '', env.TMPDIR ?? '', '/nonexistent']) {
    const p = r.replace(/[\\/]+$/, '');
    // `/` or `/tmp` alone would match any path a program mentions; the generic rule below covers homes.
    if (p.length > 4 && path.isAbsolute(p)) known.add(p);
  }
  const generic = /(?:\/home\/|\/Users\/|[A-Za-z]:\\+Users\\+)[^\s/\\'"]+/;
  return (text) => {
    for (const p of known) if (text.includes(p)) return p;
    return generic.exec(text)?.[0];
  };
}
