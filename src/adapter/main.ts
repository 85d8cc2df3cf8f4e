// Standalone replay debug adapter (dist/adapter.js): DAP over stdio by
// default, or a TCP server on 127.0.0.1 with `--server=PORT` (0 picks a free
// port, printed on stdout). Used by tests and by editors other than VS Code.
import * as net from 'node:net';
import { replaySessionDeps } from './node-deps';
import { ReplayDebugSession } from './replay-debug-session';
import { TracerPools, tracerRecorder } from './tracer-recorder';

const USAGE = 'usage: node dist/adapter.js [--server=PORT]\n  DAP over stdin/stdout, or a TCP server on 127.0.0.1:PORT (0: any free port).';

/** Serves one session per connection; resolves with the listening server. */
export async function startServer(port: number, pools: TracerPools, cwd = process.cwd()): Promise<net.Server> {
  const recorder = tracerRecorder(pools.poolFor);
  const server = net.createServer((socket) => {
    // A stop is a response plus events written back to back: without this, Nagle's algorithm holds them ~40 ms.
    socket.setNoDelay(true);
    const session = new ReplayDebugSession(replaySessionDeps({ recorder, cwd }));
    session.setRunAsServer(true);
    session.start(socket, socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const serverArg = argv.find((a) => a.startsWith('--server='));
  const unknown = argv.filter((a) => a !== serverArg);
  if (unknown.length) {
    process.stderr.write(`execverify adapter: unknown argument '${unknown[0]}'\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const pools = new TracerPools();
  if (serverArg) {
    const port = Number(serverArg.slice('--server='.length));
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`execverify adapter: --server needs a port number (0-65535), got '${serverArg.slice(9)}'\n`);
      process.exitCode = 2;
      return;
    }
    const server = await startServer(port, pools);
    const address = server.address() as net.AddressInfo;
    process.stdout.write(`execverify replay adapter listening on 127.0.0.1:${address.port}\n`);
    const stop = () => {
      server.close();
      void pools.close().then(() => process.exit(0));
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  const session = new ReplayDebugSession(replaySessionDeps({ recorder: tracerRecorder(pools.poolFor), cwd: process.cwd() }));
  // The session exits the process when the client disconnects; stop the tracer workers first.
  process.on('exit', () => void pools.close());
  process.stdin.on('end', () => void pools.close().then(() => process.exit(0)));
  session.start(process.stdin, process.stdout);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`execverify adapter: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
