// An untrusted workspace through the real engine server: whatever settings
// reach it (a hostile interpreter, a hostile endpoint), predicting after a
// replayed trace, revealing, judging, verifying and probing the endpoint run
// no process and send nothing anywhere. Checked from outside: the hostile
// interpreter would leave a marker file, the hostile endpoint logs every
// request. A trusted control run proves both detectors fire.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { HealthSchema, PredictionSchema, StepVerdictSchema, TraceResultSchema } from '../../src/server/protocol';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { startServer, type ServerUnderTest } from './lsp-client';

const REPO = path.resolve(__dirname, '..', '..');
const ws = mkdtempSync(path.join(tmpdir(), 'ev-untrusted-'));
const file = path.join(ws, 'loop.py');
const source = readFileSync(path.join(REPO, 'test/fixtures/editor/loop.py'), 'utf8');
writeFileSync(file, source);
const uri = pathToFileURL(file).href;
/** A trace file from elsewhere, as a replay session of "traceFile" hands it to the server. */
const replayed: unknown = JSON.parse(readFileSync(path.join(REPO, 'test/fixtures/editor/loop-trace.json'), 'utf8'));
const KEY = 'sk-stored-key-never-for-the-workspace';

/** An interpreter named by the workspace: if anything ever runs it, it leaves `marker` behind (then behaves as Python). */
function hostilePython(marker: string): string {
  const real = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  const script = path.join(ws, `hostile-python-${path.basename(marker)}`);
  writeFileSync(script, `#!/bin/sh\necho ran >> ${JSON.stringify(marker)}\nexec ${JSON.stringify(real)} "$@"\n`);
  chmodSync(script, 0o755);
  return script;
}

let endpoint: OpenAIServer;
before(async () => {
  endpoint = await startOpenAIServer({
    models: ['m'],
    script: () => ({ text: JSON.stringify({ next_line: 3, variables: [{ name: 'total', value: '0', type: 'int' }] }) }),
  });
});
after(async () => {
  await endpoint.close();
});

async function workspaceServer(trusted: boolean, marker: string): Promise<ServerUnderTest> {
  // The workspace's settings, as a client that does not filter them would send them (initialize and workspace/configuration).
  const hostile = { pythonPath: hostilePython(marker), baseUrl: endpoint.url, model: 'm', reveal: 'immediately', requestTimeoutMs: 20_000 };
  const server = await startServer({
    rootPath: ws,
    initializationOptions: { trusted, inline: 'notifications', settings: hostile },
    settings: hostile,
    env: { EXECVERIFY_API_KEY: KEY },
  });
  await server.open(file, source);
  return server;
}

const untrustedCode = (e: Error & { data?: { code?: string } }) => {
  assert.equal(e.data?.code, 'untrusted', e.message);
  assert.match(e.message, /not trusted/);
  assert.match(e.message, /Trust the workspace \(Manage Workspace Trust\)/, 'says what to do next');
  return true;
};

test('untrusted: predict after a replayed trace, reveal, judge-on-step, verify and the health probe run nothing and send nothing', async () => {
  const marker = path.join(ws, 'ran-untrusted.txt');
  const server = await workspaceServer(false, marker);
  try {
    const run = TraceResultSchema.parse(await server.connection.sendRequest('execverify/adopt', { uri, trace: replayed }));
    await assert.rejects(server.connection.sendRequest('execverify/predict', { runId: run.runId, step: 1 }), untrustedCode);
    await assert.rejects(server.connection.sendRequest('execverify/verify', { runId: run.runId }), untrustedCode);
    await assert.rejects(server.connection.sendRequest('execverify/trace', { uri, entry: 'total_even([2])' }), untrustedCode);
    await assert.rejects(server.connection.sendRequest('execverify/reveal', { predictionId: 'pred-1' }), /No prediction/);
    // The debugger stepping on would judge pending predictions: there are none, and nothing starts.
    await server.connection.sendNotification('execverify/stepChanged', { runId: run.runId, step: 3, uri, line: 3 });
    const health = HealthSchema.parse(await server.connection.sendRequest('execverify/health', {}));
    assert.equal(health.state, 'untrusted');
    // Replaying stays possible: the panel of the adopted run is served.
    const panel = (await server.connection.sendRequest('execverify/panel', { runId: run.runId })) as { rows: unknown[] };
    assert.ok(panel.rows.length > 0);
  } finally {
    await server.close();
  }
  assert.equal(existsSync(marker), false, 'the workspace interpreter never ran');
  assert.deepEqual(
    endpoint.requests.map((r) => `${r.method} ${r.path}`),
    [],
    'the workspace endpoint received no request at all',
  );
});

test('trust granted later: the same server predicts and judges (the detectors of the untrusted test do fire)', async () => {
  const marker = path.join(ws, 'ran-trusted.txt');
  endpoint.requests.length = 0;
  const server = await workspaceServer(false, marker);
  try {
    const run = TraceResultSchema.parse(await server.connection.sendRequest('execverify/adopt', { uri, trace: replayed }));
    await assert.rejects(server.connection.sendRequest('execverify/predict', { runId: run.runId, step: 1 }), untrustedCode);
    await server.connection.sendNotification('execverify/setTrust', { trusted: true });
    // Notifications and requests are handled in order: this predict sees the trust.
    const prediction = PredictionSchema.parse(await server.connection.sendRequest('execverify/predict', { runId: run.runId, step: 1 }));
    assert.equal(prediction.nextLine, 3);
    // reveal "immediately": the judge ran through the configured interpreter.
    const verdict = StepVerdictSchema.parse(await server.connection.sendRequest('execverify/reveal', { predictionId: prediction.id }));
    assert.equal(verdict.actualNextLine, 3);
  } finally {
    await server.close();
  }
  assert.equal(existsSync(marker), true, 'the configured interpreter ran once trusted');
  const asked = endpoint.requests.filter((r) => r.method === 'POST');
  assert.equal(asked.length, 1);
  assert.equal(asked[0]!.headers.authorization, `Bearer ${KEY}`);
});
