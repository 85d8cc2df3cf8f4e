// The manifest of what the extension registers, in order. How the engine
// server is started is passed in, so the whole activation also runs in the
// unit tests against a fake `vscode` and a fake engine.
import type * as vscode from 'vscode';
import { Methods } from '../server/protocol';
import { registerCommands } from './commands';
import { registerReplayDebugger } from './debug';
import { registerDecorations } from './decorations';
import { registerLiveDebug } from './live-debug';
import { registerLiveBridge } from './live-predict';
import { registerRecordFromHere } from './record-from-here';
import type { EngineClient } from './engine-client';
import { registerOutput, type Log } from './log';
import { registerPanel } from './panel';
import { registerReplayBridge } from './replay';
import { registerReportViewer } from './report';
import { registerSecrets, type ApiKeyStore } from './secrets';
import { scheduleSelfTest } from './selftest';
import { registerStatusBar } from './statusbar';
import { createTrustGate } from './trust';

export type StartEngine = (context: vscode.ExtensionContext, deps: { log: Log; secrets: ApiKeyStore; outputChannel: vscode.OutputChannel }) => EngineClient;

export function activateExtension(context: vscode.ExtensionContext, startEngine: StartEngine) {
  const { log, channel } = registerOutput(context);
  const secrets = registerSecrets(context, { log });
  const trust = createTrustGate();
  const client = startEngine(context, { log, secrets, outputChannel: channel });
  context.subscriptions.push(trust.onDidGrant(() => client.notify(Methods.setTrust, { trusted: true })));
  const inline = registerDecorations(context, { client });
  const status = registerStatusBar(context, { client, log });
  const panel = registerPanel(context, { client, log });
  const replay = registerReplayBridge(context, { client, panel, log });
  registerReplayDebugger(context, { recorder: () => replay.recorder, onTrace: replay.onTrace });
  const live = registerLiveDebug(context);
  const liveBridge = registerLiveBridge(context, { client, live, log });
  registerCommands(context, { client, trust, panel, status, replay, live: liveBridge, log });
  registerRecordFromHere(context, { client, trust, live: liveBridge, replay, log });
  registerReportViewer(context, { log });
  // Only a test build has the self-test (scripts/build.mjs --test, which test/e2e/run.sh uses):
  // in the shipped bundle this condition is false at build time and the self-test is left out.
  if (process.env.EXECVERIFY_TEST_BUILD === '1') scheduleSelfTest(context, { client });
  return { client, inline, status, panel, replay, live };
}
