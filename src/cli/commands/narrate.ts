// `execverify narrate FILE --entry "f(1)"`: record one run, have a model narrate
// it (or, with no endpoint, the template narrator), and check every claim of
// the narration against the run: a verdict per claim, unverifiable ones said.
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, type Command } from '../command';
import { ModelClient } from '../../engine/model/client';
import { ConfigError, endpointFromEnv } from '../../engine/model/config';
import { resolvePython } from '../../engine/python';
import { narrate } from '../../engine/simulate/narrate';
import { modelSource } from '../../engine/synthesize/source';
import { TracerError, TracerPool, type TraceJob } from '../../engine/trace/runner';

export const narrateCommand: Command = {
  name: 'narrate',
  summary: 'Trace a run, have a model (or the template narrator) narrate it, and check every claim of the narration against the run.',
  usage:
    'execverify narrate FILE (--entry "f([1, 2])" | --script [--stdin PATH]) [--narration TEXT_FILE] [--base-url URL --model NAME] [--json] [--python PATH]',
  options: {
    entry: { type: 'string', short: 'e' },
    script: { type: 'boolean' },
    stdin: { type: 'string' },
    narration: { type: 'string' },
    'base-url': { type: 'string' },
    model: { type: 'string' },
    json: { type: 'boolean' },
    python: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals.length !== 1) throw new UsageError(positionals.length ? `one FILE only (got ${positionals.join(', ')})` : 'missing FILE');
    if ((typeof values.entry === 'string') === (values.script === true)) throw new UsageError('say how to run FILE: --entry "f(1, 2)" or --script');
    if (values.stdin !== undefined && values.script !== true) throw new UsageError('--stdin goes with --script');
    const file = path.resolve(io.cwd, positionals[0]!);
    if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`no such file: ${positionals[0]}`);
    const read = (flag: string, p: string) => {
      try {
        return readFileSync(path.resolve(io.cwd, p), 'utf8');
      } catch {
        throw new UsageError(`--${flag} ${p}: cannot read it`);
      }
    };
    const given = typeof values.narration === 'string' ? read('narration', values.narration) : undefined;
    const job: TraceJob = {
      path: file,
      cwd: path.dirname(file),
      entry: typeof values.entry === 'string' ? { kind: 'call', expr: values.entry } : { kind: 'script', args: [] },
      ...(typeof values.stdin === 'string' ? { stdin: read('stdin', values.stdin) } : {}),
    };
    let client: ModelClient | undefined;
    try {
      const endpoint = endpointFromEnv(io.env, {
        ...(typeof values['base-url'] === 'string' ? { baseURL: values['base-url'] } : {}),
        ...(typeof values.model === 'string' ? { model: values.model } : {}),
      });
      client = endpoint && given === undefined ? new ModelClient(endpoint) : undefined;
    } catch (err) {
      if (err instanceof ConfigError) throw new UsageError(err.message);
      throw err;
    }
    const pool = new TracerPool({ python: resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env), size: 1, env: io.env });
    try {
      const trace = await pool.trace(job, io.signal);
      const narrator = given !== undefined ? { text: given, label: String(values.narration) } : client ? { model: modelSource(client) } : undefined;
      const result = await narrate(pool, trace, narrator, io.signal);
      if (values.json) {
        io.stdout.write(JSON.stringify(result) + '\n');
        return 0;
      }
      const c = result.check;
      io.stdout.write(`narrated by: ${result.by.kind === 'template' ? 'the template narrator (no model)' : result.by.label}\n`);
      for (const claim of c.claims) {
        const mark = claim.verdict === 'true' ? 'true ' : claim.verdict === 'false' ? 'FALSE' : '  ?  ';
        const why =
          claim.verdict === 'false' && claim.truth !== undefined
            ? `  (the run: ${claim.truth})`
            : claim.verdict === 'unverifiable'
              ? `  (${claim.reason})`
              : '';
        io.stdout.write(`  ${mark}  ${claim.sentence}${why}\n`);
      }
      io.stdout.write(`${c.verdict}: ${c.true} true, ${c.false} false, ${c.unverifiable} unverifiable${c.cut ? ' (checked up to the length cap)' : ''}\n`);
      return 0;
    } catch (err) {
      if (err instanceof TracerError) {
        io.stderr.write(`execverify narrate: ${err.code === 'cancelled' ? 'cancelled' : err.message}\n`);
        return err.code === 'cancelled' ? 130 : 1;
      }
      throw err;
    } finally {
      client?.close();
      await pool.close();
    }
  },
};
