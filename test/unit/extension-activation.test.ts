// Activation against a fake `vscode`: what the manifest promises is registered,
// settings agree with the server's schema, and the API key stays secret.
import '../support/use-fake-vscode';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, test } from 'node:test';
import { activateExtension } from '../../src/extension/activation';
import { initializationOptions, serverEnvironment } from '../../src/extension/engine-client';
import { SETTING_KEYS, readSettings } from '../../src/extension/settings';
import { SettingsSchema } from '../../src/server/protocol';
import { fake, makeContext, resetFake } from '../support/fake-vscode';
import { FakeEngineClient, tick } from './extension-fakes';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: {
    commands: { command: string; title: string; category: string }[];
    configuration: { properties: Record<string, { default?: unknown }> };
  };
};

function activate() {
  const context = makeContext('/ext', manifest);
  const engine = new FakeEngineClient().on('execverify/health', () => ({ state: 'baseline', endpoint: '', model: '', message: 'no endpoint' }));
  const api = activateExtension(context, () => engine);
  return { context, engine, api };
}

beforeEach(() => resetFake());

test('activation registers every command the manifest contributes, and nothing unlisted', () => {
  activate();
  const contributed = manifest.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...fake.commands.keys()].sort(), contributed);
});

test('every contributed command is in the ExecVerify category', () => {
  for (const c of manifest.contributes.commands) assert.equal(c.category, 'ExecVerify', c.command);
});

test('activation events stay narrow: Python files, the replay debugger, the debuggers live predict reads exactly, the restored panel', () => {
  assert.ok(!manifest.activationEvents.includes('*'));
  assert.ok(manifest.activationEvents.includes('onLanguage:python'));
  assert.ok(
    manifest.activationEvents.every((e) =>
      /^(onLanguage:python|onDebug\w*:execverify|onDebugResolve:(debugpy|lldb-dap|lldb-vscode)|onWebviewPanel:execverify\.panel)$/.test(e),
    ),
    manifest.activationEvents.join(),
  );
});

test('everything registered is disposed with the extension', () => {
  const { context } = activate();
  assert.ok(context.subscriptions.length >= manifest.contributes.commands.length);
  for (const d of context.subscriptions) d.dispose();
  assert.equal(fake.commands.size, 0);
});

test('the contributed settings are exactly the ones the server understands, with the same defaults', () => {
  const declared = Object.keys(manifest.contributes.configuration.properties)
    .map((k) => k.replace(/^execverify\./, ''))
    .sort();
  assert.deepEqual(declared, [...SETTING_KEYS].sort());
  assert.deepEqual(declared, Object.keys(SettingsSchema.shape).sort());
  const defaults = SettingsSchema.parse({});
  for (const key of declared) {
    assert.deepEqual(manifest.contributes.configuration.properties[`execverify.${key}`]!.default, (defaults as Record<string, unknown>)[key], key);
  }
});

test('settings are read from the execverify section and sent at start without any key', () => {
  fake.configuration = { 'execverify.baseUrl': 'http://127.0.0.1:9/v1', 'execverify.alpha': 0.25 };
  assert.deepEqual(readSettings(), { baseUrl: 'http://127.0.0.1:9/v1', alpha: 0.25 });
  const init = initializationOptions(false);
  assert.equal(init.trusted, false);
  assert.equal(init.inline, 'notifications');
  assert.equal(init.workspaceRoot, '/ws');
  assert.ok(!JSON.stringify(init).toLowerCase().includes('key'));
});

test('the API key reaches the server only through its environment', () => {
  const env = serverEnvironment('sk-secret', { PATH: '/bin', EXECVERIFY_API_KEY: 'stale' });
  assert.equal(env.EXECVERIFY_API_KEY, 'sk-secret');
  assert.equal(env.PATH, '/bin');
  assert.equal(serverEnvironment(undefined, { EXECVERIFY_API_KEY: 'stale' }).EXECVERIFY_API_KEY, undefined);
});

test('"Set API Key" stores the key in secret storage and never writes it to the log', async () => {
  const { context } = activate();
  fake.inputAnswers.push('  sk-very-secret-123  ');
  await fake.commands.get('execverify.setApiKey')!();
  assert.equal(context.secrets._all.get('execverify.apiKey'), 'sk-very-secret-123');
  assert.equal(fake.inputBoxes[0].password, true);
  assert.ok(fake.outputLines.length > 0);
  assert.ok(fake.outputLines.every((l) => !l.includes('sk-very-secret')));
  fake.inputAnswers.push('');
  await fake.commands.get('execverify.setApiKey')!();
  assert.equal(context.secrets._all.has('execverify.apiKey'), false);
});

test('granting workspace trust tells the server', async () => {
  const { engine } = activate();
  fake.emitters.trustGranted.fire();
  await tick();
  assert.deepEqual(engine.notifications.at(-1), { method: 'execverify/setTrust', params: { trusted: true } });
});

test('the status bar shows the endpoint health at start', async () => {
  activate();
  await tick();
  const item = fake.statusItems.find((i) => i.id === 'execverify.status');
  assert.equal(item.text, '$(beaker) ExecVerify: baseline');
  assert.equal(item.visible, true);
  assert.equal(item.command, 'execverify.checkEndpoint');
});
