// Workspace trust in the extension against a fake `vscode` whose workspace
// settings win over user settings (as VS Code's would, were the restriction
// not applied): in an untrusted workspace the interpreter, the endpoint and
// the store path never come from the workspace, and the replay debugger
// records nothing whatever configuration reaches it.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, test } from 'node:test';
import type { Recorder } from '../../src/adapter/replay-debug-session';
import { trustedRecorder } from '../../src/extension/debug';
import { initializationOptions } from '../../src/extension/engine-client';
import { RESTRICTED_KEYS, readSettings, settingsSection } from '../../src/extension/settings';
import { fake, resetFake } from '../support/fake-vscode';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations?: string[] } };
  contributes: { configuration: { properties: Record<string, { description?: string; markdownDescription?: string }> } };
};

const HOSTILE = {
  'execverify.pythonPath': '/tmp/evil/python',
  'execverify.baseUrl': 'http://attacker.example/v1',
  'execverify.datasetDir': '/home/someone/.ssh',
  'execverify.model': 'workspace-model',
};

beforeEach(() => {
  resetFake();
  fake.workspaceConfiguration = { ...HOSTILE };
  fake.configuration = { 'execverify.baseUrl': 'http://127.0.0.1:8000/v1' };
});

test('untrusted: the interpreter, endpoint and store path come from user settings or defaults, never the workspace', () => {
  fake.trusted = false;
  const s = readSettings();
  assert.equal(s.baseUrl, 'http://127.0.0.1:8000/v1', 'the user’s own endpoint');
  assert.equal('pythonPath' in s, false, 'no user value: the default (found on PATH)');
  assert.equal('datasetDir' in s, false, 'no user value: the default store');
  assert.equal(s.model, 'workspace-model', 'a setting that names nothing to run or reach still comes from the workspace');
});

test('trusted: workspace settings apply as usual', () => {
  fake.trusted = true;
  const s = readSettings();
  assert.equal(s.pythonPath, '/tmp/evil/python');
  assert.equal(s.baseUrl, 'http://attacker.example/v1');
  assert.equal(s.datasetDir, '/home/someone/.ssh');
});

test('untrusted: what the server is told at start and when it pulls settings holds no workspace value of a restricted setting', () => {
  fake.trusted = false;
  const init = JSON.stringify(initializationOptions(false));
  const pulled = JSON.stringify([
    settingsSection('execverify')?.value,
    settingsSection('execverify.pythonPath')?.value,
    settingsSection('execverify.baseUrl')?.value,
  ]);
  for (const sent of [init, pulled]) {
    assert.ok(!sent.includes('/tmp/evil/python'), sent);
    assert.ok(!sent.includes('attacker.example'), sent);
    assert.ok(!sent.includes('.ssh'), sent);
  }
  assert.equal(settingsSection('python'), undefined, 'other sections are left to the language client');
});

test('package.json declares exactly the restricted settings the code enforces', () => {
  const declared = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations ?? [];
  assert.deepEqual([...declared].sort(), RESTRICTED_KEYS.map((k) => `execverify.${k}`).sort());
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
});

test('every contributed setting that names an interpreter, an endpoint or a path is restricted', () => {
  const names = /interpreter|executable|url|endpoint|path|folder|directory|store/i;
  for (const [key, p] of Object.entries(manifest.contributes.configuration.properties)) {
    const text = `${key} ${p.description ?? ''} ${p.markdownDescription ?? ''}`;
    if (key === 'execverify.model' || key === 'execverify.apiMode') continue; // name the model and the API shape, not where they are
    if (names.test(text))
      assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations?.includes(key), `${key} names something to run or reach: ${text}`);
  }
});

test('untrusted: the replay debugger records nothing, whatever launch configuration reaches it', async () => {
  let asked = 0;
  const inner: Recorder = { record: async () => ((asked += 1), { ok: false, message: 'inner' }) };
  fake.trusted = false;
  const r = await trustedRecorder(() => inner).record(
    { program: '/ws/x.py', entry: { kind: 'script', args: [] }, cwd: '/ws', python: '/tmp/evil/python' },
    new AbortController().signal,
  );
  assert.equal(asked, 0);
  assert.equal(r.ok, false);
  assert.match(r.ok ? '' : r.message, /untrusted workspace.*"traceFile"/);
  fake.trusted = true;
  await trustedRecorder(() => inner).record({ program: '/ws/x.py', entry: { kind: 'script', args: [] }, cwd: '/ws' }, new AbortController().signal);
  assert.equal(asked, 1);
});
