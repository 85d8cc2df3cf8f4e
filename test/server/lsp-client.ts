// A real LSP client for the server tests: spawns the engine server over stdio
// and speaks JSON-RPC to it with vscode-jsonrpc, as any editor would.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { WorkDoneProgress } from 'vscode-languageserver/node';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection, type MessageConnection } from 'vscode-jsonrpc/node';

const repo = path.resolve(__dirname, '..', '..');

export interface ServerUnderTest {
  connection: MessageConnection;
  /** What the server answered to `initialize`. */
  initializeResult: { capabilities: Record<string, unknown> };
  /** Notifications received, by method, in arrival order. */
  notifications: { method: string; params: unknown }[];
  /** The server's log lines (window/logMessage). */
  logs: string[];
  stderr: () => string;
  open(file: string, text: string, version?: number): Promise<void>;
  close(): Promise<void>;
  process: ChildProcess;
}

export interface StartOptions {
  initializationOptions?: Record<string, unknown>;
  rootPath?: string;
  env?: Record<string, string>;
  /** Client capability window.workDoneProgress (server-initiated progress). */
  workDoneProgress?: boolean;
  /** Answers to workspace/configuration (the `execverify` section). */
  settings?: Record<string, unknown>;
}

export async function startServer(options: StartOptions = {}): Promise<ServerUnderTest> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'src/server/main.ts'), '--stdio'], {
    cwd: repo,
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  const notifications: { method: string; params: unknown }[] = [];
  const logs: string[] = [];
  connection.onNotification((method, params) => {
    if (method === 'window/logMessage') logs.push((params as { message: string }).message);
    else notifications.push({ method, params });
  });
  connection.onRequest('workspace/configuration', () => [options.settings ?? {}]);
  connection.onRequest('workspace/codeLens/refresh', () => null);
  connection.onRequest('workspace/inlayHint/refresh', () => null);
  // Server-initiated progress: follow each token the server creates, recording its reports as `$/progress`.
  connection.onRequest('window/workDoneProgress/create', (params: { token: string | number }) => {
    connection.onProgress(WorkDoneProgress.type, params.token, (value) => notifications.push({ method: '$/progress', params: { token: params.token, value } }));
    return null;
  });
  connection.listen();
  const rootUri = options.rootPath ? pathToFileURL(options.rootPath).href : null;
  const initializeResult = await connection.sendRequest<{ capabilities: Record<string, unknown> }>('initialize', {
    processId: process.pid,
    rootUri,
    workspaceFolders: rootUri ? [{ uri: rootUri, name: 'ws' }] : null,
    capabilities: {
      workspace: { configuration: options.settings !== undefined, codeLens: { refreshSupport: true } },
      window: { workDoneProgress: options.workDoneProgress ?? false },
    },
    initializationOptions: options.initializationOptions ?? {},
  });
  await connection.sendNotification('initialized', {});
  return {
    connection,
    initializeResult,
    notifications,
    logs,
    stderr: () => stderr,
    process: child,
    async open(file, text, version = 1) {
      await connection.sendNotification('textDocument/didOpen', {
        textDocument: { uri: pathToFileURL(file).href, languageId: 'python', version, text },
      });
    },
    async close() {
      try {
        await Promise.race([connection.sendRequest('shutdown'), new Promise((r) => setTimeout(r, 3000))]);
        await connection.sendNotification('exit');
      } catch {
        // Already gone.
      }
      connection.dispose();
      if (child.exitCode === null) {
        await Promise.race([new Promise((r) => child.once('exit', r)), new Promise((r) => setTimeout(r, 2000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  };
}

/** Waits until `predicate` holds on the notifications received, or fails after `ms`. */
export async function waitFor<T>(probe: () => T | undefined, what: string, ms = 10_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
