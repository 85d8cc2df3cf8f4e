// How a recorded run ended, in words for people: the engine server's run
// summaries ("The run of f(3) returned 6") and the replay debugger's Debug
// Console ("f(3) returned 6") say it the same way.
import * as path from 'node:path';
import type { Trace, Value } from './schema';

/** A recorded value as shown to people: its repr, marked when the tracer cut it. */
export function displayValue(value: Value): string {
  return value.truncated ? `${value.repr} (truncated)` : value.repr;
}

/** What ran: the call expression, the function, or the script's file name. */
export function runSubject(trace: Trace): string {
  const e = trace.entry;
  return e.kind === 'call' ? e.expr : e.kind === 'function' ? e.target : path.basename(trace.files[0]?.path ?? 'the script');
}

/**
 * One line on how the run ended: a predicate ("returned 6", "raised
 * ValueError: bad (line 4 of m.py)"), or with `subject` a sentence that names
 * what ran ("f(3) returned 6").
 */
export function describeOutcome(trace: Trace, opts: { subject?: boolean } = {}): string {
  const o = trace.outcome;
  let phrase: string;
  switch (o.kind) {
    case 'returned':
      phrase = trace.entry.kind === 'script' ? 'finished' : `returned ${displayValue(o.value)}`;
      break;
    case 'raised': {
      const file = o.file != null ? trace.files[o.file] : undefined;
      phrase = `raised ${o.type}: ${o.message}${o.line !== null ? ` (line ${o.line}${file ? ` of ${path.basename(file.path)}` : ''})` : ''}`;
      break;
    }
    case 'exited':
      phrase = `exited with code ${o.code}`;
      break;
    case 'limit':
      phrase = `stopped by the ${o.limit} limit after ${trace.steps.length} steps: ${o.message}`;
      break;
    case 'tampered':
      phrase = `was tampered with, so nothing it recorded is trusted: ${o.message}`;
      break;
    case 'crashed':
      phrase = `crashed: ${o.message}${o.exitCode !== null ? ` (exit code ${o.exitCode})` : ''}${o.signal ? ` (signal ${o.signal})` : ''}`;
      break;
  }
  return opts.subject ? `${runSubject(trace)} ${phrase}` : phrase;
}
