// "Predict next step" in the user's own debug session, through the real engine
// server over its LSP stream: the test is the editor — it runs a real debugpy
// session (.venv, as a user's Python Debugger would), forwards its stops and
// resumes as the extension's tracker does (execverify/liveStopped, …), and
// answers the server's execverify/dap requests with that session's DAP
// connection. The model is the OpenAI test server; the judge is the real one.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapClient } from '../../src/engine/dap/client';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { startServer, type ServerUnderTest } from './lsp-client';

const REPO = path.resolve(__dirname, '../..');
const PYTHON = path.join(REPO, '.venv/bin/python');
const ws = mkdtempSync(path.join(tmpdir(), 'ev-live-'));
const PROGRAM = path.join(ws, 'walk.py');
copyFileSync(path.join(REPO, 'test/fixtures/live/walk.py'), PROGRAM);
const uri = pathToFileURL(PROGRAM).href;
const SESSION = 'session-1';
/** Generous: the machine may be loaded; nothing here measures time. */
const PATIENCE = 60_000;

let model: OpenAIServer;
let server: ServerUnderTest;
let adapter: ChildProcess;
let dap: DapClient;
let threadId = 1;
/** Every DAP request the server sent into the session, in order. */
const sent: { command: string; args: unknown }[] = [];

/** Polls an async probe until it gives a value (states, not times: the limit only ends a hung run). */
async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() - start > PATIENCE) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

type Lens = { range: { start: { line: number } }; command?: { title: string; command: string; arguments?: unknown[] } };
const lenses = async () => (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
const liveLens = async () => (await lenses()).find((l) => l.command?.title === 'Predict next step');

before(async () => {
  model = await startOpenAIServer({ models: ['m'] });
  server = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications' },
    settings: { baseUrl: model.url, model: 'm', requestTimeoutMs: 30_000 },
  });
  await server.open(PROGRAM, readFileSync(PROGRAM, 'utf8'));
  // The user's debug session: debugpy's adapter, the program under it, a breakpoint at `total = 0` in walk().
  adapter = spawn(PYTHON, ['-m', 'debugpy.adapter'], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  dap = new DapClient(adapter.stdout!, adapter.stdin!);
  await dap.request('initialize', { clientID: 'test', adapterID: 'debugpy', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const initialized = dap.waitFor('initialized');
  const launched = dap.request('launch', {
    request: 'launch',
    type: 'debugpy',
    name: 'user session',
    program: PROGRAM,
    cwd: ws,
    python: [PYTHON],
    justMyCode: true,
    showReturnValue: true,
    console: 'internalConsole',
  });
  launched.catch(() => undefined);
  await initialized;
  await dap.request('setBreakpoints', { source: { path: PROGRAM }, breakpoints: [{ line: 6 }] });
  const first = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await dap.request('configurationDone', {});
  await launched;
  threadId = (await first).body.threadId ?? 1;
  // The extension's side of execverify/dap: the session's own requests (customRequest in VS Code).
  server.connection.onRequest('execverify/dap', async (p: { sessionId: string; command: string; args?: unknown }) => {
    assert.equal(p.sessionId, SESSION);
    sent.push({ command: p.command, args: p.args });
    return dap.request(p.command, p.args);
  });
});

after(async () => {
  await dap?.request('disconnect', { terminateDebuggee: true }).catch(() => undefined);
  try {
    process.kill(-adapter.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
  await server?.close();
  await model?.close();
});

test('a stop of a followed session puts "Predict next step" on its line; a resume takes it away', async () => {
  assert.equal(await liveLens(), undefined, 'no session stopped yet');
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: SESSION, threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const lens = await until(liveLens, 'the live lens');
  assert.equal(lens.range.start.line, 5, 'line 6, 0-based');
  assert.equal(lens.command?.command, 'execverify.predictNextStep');
  assert.deepEqual(lens.command?.arguments, [{ sessionId: SESSION }]);
  assert.deepEqual(
    sent.map((s) => s.command),
    ['stackTrace'],
    'where it stopped is read through the session (one stackTrace), nothing else runs in it',
  );
  await server.connection.sendNotification('execverify/liveResumed', { sessionId: SESSION, how: 'next' });
  await until(async () => ((await liveLens()) ? undefined : true), 'the lens gone while the session runs');
  // Back where it was for the next tests: the breakpoint line, stopped.
  const line = await stepBack();
  assert.equal(line, 6);
});

/** The test above resumed nothing really (only told the server): tell it the session is stopped again. */
async function stepBack(): Promise<number> {
  await server.connection.sendNotification('execverify/liveStopped', { sessionId: SESSION, threadId, reason: 'breakpoint', debugType: 'debugpy' });
  const lens = await until(liveLens, 'the live lens again');
  return lens.range.start.line + 1;
}
