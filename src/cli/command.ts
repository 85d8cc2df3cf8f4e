// The shape every CLI command has, and the one argument parser they share, so
// unknown flags and missing values fail the same way everywhere.
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface CliIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborted on SIGINT so long work can stop cleanly. */
  signal: AbortSignal;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /** Returns the process exit code. */
  run(values: Record<string, unknown>, positionals: string[], io: CliIO): Promise<number>;
}

/** A user error: printed as one line, exit code 2 (no stack trace). */
export class UsageError extends Error {}

export function parseCommandArgs(command: Command, argv: string[]) {
  try {
    return parseArgs({ args: argv, options: command.options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.replace(/\. To specify.*$/s, '')}\nusage: ${command.usage}`);
  }
}
