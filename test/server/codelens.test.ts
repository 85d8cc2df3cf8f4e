// The engine server over a real LSP connection: initialize, CodeLens on Python
// functions, clear errors for bad requests.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { startServer, type ServerUnderTest } from './lsp-client';

const dir = mkdtempSync(path.join(tmpdir(), 'ev-lens-'));
const file = path.join(dir, 'mod.py');
const source = [
  'import math',
  '',
  'def add(a, b):',
  '    """def not_a_function(): this is a docstring"""',
  '    return a + b',
  '',
  'class Box:',
  '    def method(self):',
  '        return 1',
  '',
  'async def fetch(x):',
  '    return x',
  '',
  'def broken(:',
  '    pass',
].join('\n');
writeFileSync(file, source);
const uri = pathToFileURL(file).href;

let server: ServerUnderTest;
before(async () => {
  server = await startServer({ rootPath: dir });
  await server.open(file, source);
});
after(async () => {
  await server.close();
});

interface Lens {
  range: { start: { line: number } };
  command: { title: string; command: string; arguments: unknown[] };
}

test('initialize advertises CodeLens and, by default, inlay hints for other editors', () => {
  assert.ok(server.initializeResult.capabilities.codeLensProvider);
  assert.ok(server.initializeResult.capabilities.inlayHintProvider);
});

test('a client that draws inline results itself gets notifications instead of inlay hints', async () => {
  const vscodeLike = await startServer({ initializationOptions: { inline: 'notifications' } });
  try {
    assert.ok(vscodeLike.initializeResult.capabilities.codeLensProvider);
    assert.equal(vscodeLike.initializeResult.capabilities.inlayHintProvider, undefined);
  } finally {
    await vscodeLike.close();
  }
});

test('CodeLens offers Trace… and Verify whole call on every top-level function, even when the file does not parse', async () => {
  const lenses = (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  const byLine = new Map<number, string[]>();
  for (const l of lenses) byLine.set(l.range.start.line + 1, [...(byLine.get(l.range.start.line + 1) ?? []), l.command.title]);
  assert.deepEqual([...byLine.keys()], [3, 11, 14]);
  for (const titles of byLine.values()) assert.deepEqual(titles.sort(), ['Trace…', 'Verify whole call']);
  const trace = lenses.find((l) => l.command.title === 'Trace…' && l.range.start.line === 2)!;
  assert.deepEqual(trace.command, { title: 'Trace…', command: 'execverify.trace', arguments: [uri, 'add'] });
});

test('CodeLens follows edits to the open document', async () => {
  await server.connection.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: 'def only(x):\n    return x\n' }],
  });
  const lenses = (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  assert.deepEqual(
    lenses.map((l) => l.range.start.line),
    [0, 0],
  );
  assert.ok(lenses.every((l) => l.command.arguments[1] === 'only'));
});

test('a request with bad parameters gets an error naming the field, and the server keeps serving', async () => {
  await assert.rejects(server.connection.sendRequest('execverify/predict', { runId: 'run-1', step: -3 }), (e: Error & { data?: { code: string } }) => {
    assert.equal(e.data?.code, 'bad_params');
    assert.match(e.message, /step/);
    return true;
  });
  const lenses = (await server.connection.sendRequest('textDocument/codeLens', { textDocument: { uri } })) as Lens[];
  assert.ok(lenses.length > 0);
});

test('predicting on a run the server does not know says to trace again', async () => {
  await assert.rejects(server.connection.sendRequest('execverify/predict', { runId: 'run-404', step: 0 }), (e: Error & { data?: { code: string } }) => {
    assert.equal(e.data?.code, 'unknown_run');
    assert.match(e.message, /trace the call again/);
    return true;
  });
});

test('an untrusted workspace refuses to trace and says how to trust it', async () => {
  const untrusted = await startServer({ rootPath: dir, initializationOptions: { trusted: false } });
  try {
    await assert.rejects(untrusted.connection.sendRequest('execverify/trace', { uri, entry: 'add(1, 2)' }), (e: Error & { data?: { code: string } }) => {
      assert.equal(e.data?.code, 'untrusted');
      assert.match(e.message, /Trust the workspace/);
      return true;
    });
  } finally {
    await untrusted.close();
  }
});
