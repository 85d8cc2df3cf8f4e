// `execverify` command-line entry: the same engine as the editor, headless.
import type { CliIO, Command } from './command';
import { UsageError, parseCommandArgs } from './command';

/** Loaded lazily so `execverify trace` does not pay for the exporters. */
const commands: Record<string, () => Promise<Command>> = {
  trace: async () => (await import('./commands/trace')).traceCommand,
  ask: async () => (await import('./commands/ask')).askCommand,
  eval: async () => (await import('./commands/eval')).evalCommand,
  harvest: async () => (await import('./commands/harvest')).harvestCommand,
  export: async () => (await import('./commands/export')).exportCommand,
  synthesize: async () => (await import('./commands/synthesize')).synthesizeCommand,
  'serve-reward': async () => (await import('./commands/serve-reward')).serveRewardCommand,
  simulate: async () => (await import('./commands/simulate')).simulateCommand,
  narrate: async () => (await import('./commands/narrate')).narrateCommand,
};

function help(): string {
  return [
    'usage: execverify <command> [options]',
    '',
    'commands:',
    ...Object.keys(commands).map((name) => `  ${name}`),
    '',
    "Run `execverify <command> --help` for a command's options. Docs: docs/cli.md",
  ].join('\n');
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    io.stdout.write(help() + '\n');
    return name ? 0 : 2;
  }
  if (name === '--version') {
    io.stdout.write('0.1.0\n');
    return 0;
  }
  const load = commands[name];
  if (!load) {
    io.stderr.write(`execverify: unknown command '${name}' (commands: ${Object.keys(commands).join(', ')})\n`);
    return 2;
  }
  const command = await load();
  try {
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout.write(`usage: ${command.usage}\n${command.summary}\n`);
      return 0;
    }
    const { values, positionals } = parseCommandArgs(command, rest);
    return await command.run(values, positionals, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`execverify ${name}: ${err.message}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    io.stderr.write(`execverify ${name}: ${message}\n`);
    return 1;
  }
}

if (require.main === module) {
  const controller = new AbortController();
  process.on('SIGINT', () => {
    if (controller.signal.aborted) process.exit(130);
    controller.abort();
  });
  main(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
  }).then((code) => {
    process.exitCode = code;
  });
}
