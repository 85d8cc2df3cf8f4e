// Trace files are data: a traceFile (or a path named inside a trace) that is
// a FIFO, a device or a huge file never blocks the adapter. It answers with a
// message that names the file and the problem; paths inside a trace that are
// not the recorded source are served from the trace. Hangs are caught by the
// test runner's timeout, never by timing a response.
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { readRegularFile } from '../../src/adapter/node-deps';
import { closePool, launch, REPO, startAdapter, type Adapter } from './harness';

const TIMEOUT = { timeout: 60_000 };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-tracefiles-'));
const fifo = path.join(dir, 'trace.fifo');
const recorded = JSON.parse(fs.readFileSync(path.join(REPO, 'test/fixtures/editor/loop-trace.json'), 'utf8')) as {
  files: { path: string; source: string }[];
  steps: Record<string, unknown>[];
};

let current: Adapter | undefined;
before(() => {
  execFileSync('mkfifo', [fifo]);
});
afterEach(async () => {
  await current?.close();
  current = undefined;
});
after(async () => {
  await closePool();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Launches `config`, expects the session to end, returns what the Debug Console showed. */
async function launchExpectingEnd(config: Record<string, unknown>): Promise<string> {
  const a = (current = await startAdapter());
  await a.dc.initializeRequest({ adapterID: 'execverify', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const terminated = a.dc.waitForEvent('terminated');
  await a.dc.launchRequest({ type: 'execverify', request: 'launch', name: 'data', ...config } as DebugProtocol.LaunchRequestArguments);
  await terminated;
  return a.events
    .filter((e) => e.event === 'output' && e.body.category === 'important')
    .map((e) => e.body.output)
    .join('');
}

function writeTrace(name: string, change: (t: typeof recorded) => void): string {
  const t = structuredClone(recorded);
  change(t);
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(t));
  return file;
}

test('a traceFile that is a FIFO with no writer is refused at once, named as a FIFO', TIMEOUT, async () => {
  const shown = await launchExpectingEnd({ traceFile: fifo });
  assert.match(shown, /Cannot read the trace file .*trace\.fifo \(.*is a FIFO \(named pipe\), not a regular file/);
  assert.match(shown, /Set "traceFile" to a trace written by `execverify trace`/);
});

test('a traceFile that is /dev/zero is refused as a device, nothing read', TIMEOUT, async () => {
  const shown = await launchExpectingEnd({ traceFile: '/dev/zero' });
  assert.match(shown, /\/dev\/zero is a character device, not a regular file/);
});

test('a traceFile over the size bound is refused with the bound, before anything is read', TIMEOUT, async () => {
  const huge = path.join(dir, 'huge.json');
  fs.writeFileSync(huge, '');
  fs.truncateSync(huge, 300 * 1024 * 1024); // sparse: no disk used, 300 MiB by stat
  const shown = await launchExpectingEnd({ traceFile: huge });
  assert.match(shown, /huge\.json is 300 MiB, more than the 256 MiB read at most/);
});

test('a program to record that is a FIFO is refused without recording', TIMEOUT, async () => {
  const shown = await launchExpectingEnd({ program: fifo, entry: 'f()' });
  assert.match(shown, /Cannot read the program .*trace\.fifo \(.*FIFO \(named pipe\), not a regular file\)/);
});

test('source paths inside a trace that are a FIFO or a device are served from the trace, never opened for reading', TIMEOUT, async () => {
  const source = recorded.files[0]!.source;
  for (const named of [fifo, '/dev/zero']) {
    const file = writeTrace(`names-${path.basename(named)}.json`, (t) => {
      t.files[0]!.path = named;
    });
    const a = (current = await startAdapter());
    await launch(a, { traceFile: file });
    const st = await a.dc.stackTraceRequest({ threadId: 1 });
    const top = st.body.stackFrames[0]!;
    assert.equal(top.source?.path, undefined, `${named} is not shown from disk`);
    assert.ok(top.source?.sourceReference, 'served by reference');
    const content = await a.dc.sourceRequest({ source: top.source, sourceReference: top.source.sourceReference! });
    assert.equal(content.body.content, source);
    await current.close();
    current = undefined;
  }
});

test('a source path inside a trace that is huge is compared without reading past the recorded size', TIMEOUT, async () => {
  const big = path.join(dir, 'big.py');
  fs.writeFileSync(big, '');
  fs.truncateSync(big, 2 * 1024 * 1024 * 1024);
  const file = writeTrace('names-big.json', (t) => {
    t.files[0]!.path = big;
  });
  const a = (current = await startAdapter());
  await launch(a, { traceFile: file });
  const top = (await a.dc.stackTraceRequest({ threadId: 1 })).body.stackFrames[0]!;
  assert.equal(top.source?.path, undefined);
  assert.match(top.source?.name ?? '', /\(recorded\)$/);
});

test('a trace that names an unknown file index is refused as not a trace', TIMEOUT, async () => {
  const file = writeTrace('bad-file-index.json', (t) => {
    t.steps[2]!.file = 7;
  });
  const shown = await launchExpectingEnd({ traceFile: file });
  assert.match(shown, /is not an ExecVerify trace: steps\[2\]\.file: expected an index into files \(0\.\.0\); got 7/);
});

test('readRegularFile reads a regular file and bounds what it reads', async () => {
  const small = path.join(dir, 'small.txt');
  fs.writeFileSync(small, 'héllo');
  assert.deepEqual(await readRegularFile(small, 100), { ok: true, text: 'héllo' });
  const r = await readRegularFile(small, 3);
  assert.equal(r.ok, false);
  assert.equal(r.ok ? '' : r.reason, 'too_large');
  const missing = await readRegularFile(path.join(dir, 'nope'), 10);
  assert.equal(missing.ok ? '' : missing.reason, 'missing');
  const folder = await readRegularFile(dir, 10);
  assert.match(folder.ok ? '' : folder.message, /is a folder, not a regular file/);
});
