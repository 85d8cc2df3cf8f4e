// "Predict next step" in a C program's debug session through the real engine
// server over its LSP stream: the editor flow is the debugpy one (the test is
// the editor: it forwards the session's stops and resumes, and answers
// execverify/dap with the session's DAP connection); only the debug type
// differs — `lldb-dap` — and the server reads the stops through lldb
// (typed, C rules). gcc -g -O0 and apt's lldb-vscode-14; the model is the
// OpenAI test server, the judge the real one. No lldb: fails, never skips.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { DapClient } from '../../src/engine/dap/client';
import { findLldbDap } from '../../src/engine/dap/lldb-tracer';
import { InlineResultsSchema, PredictionSchema, type InlineItem } from '../../src/server/protocol';
import { startOpenAIServer, type OpenAIServer, type Reply } from '../support/openai-server';
import { startServer, type ServerUnderTest } from './lsp-client';
import { leftBehind } from '../support/processes';

const REPO = path.resolve(__dirname, '../..');
const ws = mkdtempSync(path.join(tmpdir(), 'ev-live-lldb-'));
const SOURCE = path.join(ws, 'walk.c');
copyFileSync(path.join(REPO, 'test/fixtures/live/walk.c'), SOURCE);
const PROGRAM = path.join(ws, 'walk');
const uri = pathToFileURL(SOURCE).href;
const SESSION = 'c-session';
const PATIENCE = 60_000;

let model: OpenAIServer;
let server: ServerUnderTest;
let adapter: ChildProcess;
let dap: DapClient;
let debuggee: number | undefined;
let threadId = 1;
const sent: { command: string; args: unknown }[] = [];
let reply: (body: Record<string, unknown> | undefined) => Reply = () => ({ text: '' });

/** A next-step answer: `next`, and for each variable the prompt asks about, `values[name]`. */
function answer(next: number, values: Record<string, [string, string]>) {
  return (body: Record<string, unknown> | undefined): Reply => {
    const asked = [...JSON.stringify(body?.messages ?? '').matchAll(/- (\w+): value and type/g)].map((m) => m[1]!);
    const variables = asked.filter((n) => values[n]).map((name) => ({ name, value: values[name]![0], type: values[name]![1] }));
    return { text: JSON.stringify({ next_line: next, variables }) };
  };
}

const stoppedNotice = (reason: string) => ({ sessionId: SESSION, threadId, reason, debugType: 'lldb-dap' });

/** The editor's side of a step: the tracker sees the request (liveResumed), then the adapter's stop (liveStopped). */
async function step(how: 'next' | 'stepIn'): Promise<void> {
  const stopped = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await server.connection.sendNotification('execverify/liveResumed', { sessionId: SESSION, how });
  await dap.request(how, { threadId });
  await server.connection.sendNotification('execverify/liveStopped', stoppedNotice((await stopped).body.reason));
}

const predict = () => server.connection.sendRequest('execverify/predictLive', { sessionId: SESSION }).then((p) => PredictionSchema.parse(p));

const inline = (): InlineItem[] => {
  const n = [...server.notifications].reverse().find((x) => x.method === 'execverify/inline' && (x.params as { uri: string }).uri === uri);
  return n ? InlineResultsSchema.parse(n.params).items : [];
};

async function verdictAt(line: number): Promise<InlineItem> {
  const start = Date.now();
  for (;;) {
    const v = inline().find((i) => i.kind === 'verdict' && i.line === line);
    if (v) return v;
    if (Date.now() - start > PATIENCE) throw new Error(`gave up waiting for the verdict at line ${line}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

before(async () => {
  const cc = spawnSync('gcc', ['-g', '-O0', '-o', PROGRAM, SOURCE], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  model = await startOpenAIServer({ models: ['m'], script: (r) => reply(r.body) });
  server = await startServer({
    rootPath: ws,
    initializationOptions: { inline: 'notifications' },
    settings: { baseUrl: model.url, model: 'm', requestTimeoutMs: 60_000 },
  });
  // The user's C debug session: lldb's adapter, the program under it, a function breakpoint on walk.
  adapter = spawn(findLldbDap(process.env), [], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  dap = new DapClient(adapter.stdout!, adapter.stdin!);
  dap.on('process', (e: DebugProtocol.ProcessEvent) => (debuggee = e.body.systemProcessId));
  await dap.request('initialize', { clientID: 'test', adapterID: 'lldb-dap', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const initialized = dap.waitFor('initialized');
  const launched = dap.request('launch', { program: PROGRAM, cwd: ws });
  launched.catch(() => undefined);
  await Promise.race([initialized, launched]);
  await dap.request('setFunctionBreakpoints', { breakpoints: [{ name: 'walk' }] });
  const first = dap.waitFor<DebugProtocol.StoppedEvent>('stopped');
  await dap.request('configurationDone', {});
  await launched;
  threadId = (await first).body.threadId ?? 1;
  server.connection.onRequest('execverify/dap', async (p: { sessionId: string; command: string; args?: unknown }) => {
    sent.push({ command: p.command, args: p.args });
    return dap.request(p.command, p.args);
  });
});

after(async () => {
  await Promise.race([dap?.request('disconnect', { terminateDebuggee: true }).catch(() => undefined), new Promise((r) => setTimeout(r, 5000))]);
  for (const pid of [debuggee, adapter ? -adapter.pid! : undefined]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  // SIGKILL cannot be ignored: each ends once scheduled; then nothing may be left.
  while (leftBehind(PROGRAM).length > 0) await new Promise((r) => setTimeout(r, 20));
  await server?.close();
  await model?.close();
  rmSync(ws, { recursive: true, force: true });
});

type Lens = { range: { start: { line: number } }; command?: { title: string; command: string } };

test('an lldb session through the editor flow: the lens on the stopped C line, predicted there, judged at the next stop by the C rules, stored as a C sample', async () => {
  await server.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'c', version: 1, text: readFileSync(SOURCE, 'utf8') } });
  await server.connection.sendNotification('execverify/liveStopped', stoppedNotice('function breakpoint'));
  const lensesNow = async () => (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  const start = Date.now();
  let lenses = await lensesNow();
  while (lenses.length === 0 && Date.now() - start < PATIENCE) {
    await new Promise((r) => setTimeout(r, 25));
    lenses = await lensesNow();
  }
  assert.deepEqual(
    lenses.map((l) => [l.range.start.line + 1, l.command?.title]),
    [[14, 'Predict next step']],
    'the live lens on the stopped line, and no Python lens in a C file',
  );
  sent.length = 0;
  reply = answer(15, { total: ['0', 'int'], n: ['2', 'int'] });
  const p = await predict();
  assert.equal(p.line, 14);
  assert.equal(p.nextLine, 15);
  assert.deepEqual(p.values.total, { value: '0', type: 'int' });
  // What ran in the debuggee: lldb's own reads; the only evaluate is lldb's `frame variable`, never Python.
  assert.deepEqual([...new Set(sent.map((s) => s.command))].sort(), ['evaluate', 'scopes', 'stackTrace', 'variables']);
  for (const s of sent.filter((x) => x.command === 'evaluate')) {
    assert.equal((s.args as { expression: string }).expression, '`frame variable --show-declaration');
  }
  await step('next');
  const verdict = await verdictAt(14);
  assert.equal(verdict.ok, true, verdict.text);
  assert.match(verdict.text, /^✓ next line 15/);
  assert.match(verdict.text, /✓ total = 0/);
  assert.match(verdict.text, /✓ n = 2/);
  const added = (await server.connection.sendRequest('execverify/addSample', { runId: p.runId })) as { added: boolean; store: string };
  assert.equal(added.added, true);
  const sample = JSON.parse(readFileSync(path.join(added.store, 'samples.jsonl'), 'utf8').trim().split('\n').at(-1)!) as {
    provenance: { truth?: string; file: string; function: string };
    trace: { python: string };
  };
  assert.deepEqual([sample.provenance.truth, sample.provenance.file, sample.provenance.function], ['live-transition', 'walk.c', 'walk']);
  assert.equal(sample.trace.python, 'unknown (built by the user)', 'a C trace names its compiler where a Python one names its version');
});

test('a wrong char is ✗, the right next line ✓; a pointer is never asked', async () => {
  reply = answer(16, { tag: ["'b'", 'char'], total: ['0', 'int'], n: ['2', 'int'], xs: ['0x7ffe', 'const int *'] });
  const p = await predict();
  assert.equal(p.line, 15);
  assert.ok(!('xs' in p.values), 'xs is a pointer: not asked');
  await step('next');
  const verdict = await verdictAt(15);
  assert.equal(verdict.ok, false);
  assert.match(verdict.text, /✓ next line 16/);
  assert.match(verdict.text, /✗ tag = 'a' \(predicted 'b'\)/);
});
