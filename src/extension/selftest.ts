// The environment-gated self-test: with EXECVERIFY_SELFTEST_OUT set, after
// activation the extension checks through the real vscode API what a UI test
// cannot see cheaply, and writes {ok, checks:[{name, ok, detail}]} as JSON there.
import { promises as fs } from 'node:fs';
import * as vscode from 'vscode';
import { HealthSchema, Methods } from '../server/protocol';
import type { EngineClient } from './engine-client';
import { readSettings } from './settings';

export interface Check {
  name: string;
  ok: boolean;
  detail?: string;
}

interface Contributes {
  commands?: { command: string }[];
  debuggers?: { type: string }[];
  configuration?: { properties?: Record<string, unknown> };
}

async function until(probe: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (probe()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return probe();
}

async function check(name: string, run: () => Promise<string | true>): Promise<Check> {
  try {
    const r = await run();
    return r === true ? { name, ok: true } : { name, ok: false, detail: r };
  } catch (e) {
    return { name, ok: false, detail: e instanceof Error ? e.message : String(e) };
  }
}

export async function runSelfTest(context: vscode.ExtensionContext, deps: { client: EngineClient }): Promise<{ ok: boolean; checks: Check[] }> {
  const contributes = (context.extension.packageJSON as { contributes?: Contributes }).contributes ?? {};
  const checks: Check[] = [];
  checks.push(
    await check('commands registered', async () => {
      const all = new Set(await vscode.commands.getCommands(true));
      const missing = (contributes.commands ?? []).map((c) => c.command).filter((c) => !all.has(c));
      return missing.length === 0 ? true : `not registered: ${missing.join(', ')}`;
    }),
    await check('debugger contributed (execverify)', async () => {
      const types = (contributes.debuggers ?? []).map((d) => d.type);
      return types.includes('execverify') ? true : `contributes.debuggers has ${JSON.stringify(types)}`;
    }),
    await check('language client running', async () => {
      if (!(await until(() => deps.client.isRunning(), 30_000))) return 'the engine server did not reach the running state in 30 s';
      const h = await deps.client.request(Methods.health, {}, HealthSchema);
      return `${h.state}`.length > 0 ? true : 'no health answer';
    }),
    await check('settings read (execverify.*)', async () => {
      const config = vscode.workspace.getConfiguration('execverify');
      const declared = Object.keys(contributes.configuration?.properties ?? {});
      if (declared.length === 0) return 'contributes.configuration declares no settings';
      if (config.inspect<number>('alpha')?.defaultValue !== 0.5) return `execverify.alpha default is ${String(config.inspect('alpha')?.defaultValue)}`;
      const read = readSettings();
      return typeof read.datasetDir === 'string' ? true : 'execverify.datasetDir was not read';
    }),
    await check('CodeLens provided on the open Python file', async () => {
      const doc = vscode.window.visibleTextEditors.find((e) => e.document.languageId === 'python')?.document;
      if (!doc) return true; // Nothing open: the UI test checks the lenses it sees.
      const ok = await until(() => deps.client.isRunning(), 30_000);
      if (!ok) return 'engine not running';
      const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', doc.uri)) ?? [];
      return lenses.some((l) => l.command?.command === 'execverify.trace') ? true : `no "Trace…" lens in ${doc.uri.fsPath}`;
    }),
  );
  return { ok: checks.every((c) => c.ok), checks };
}

/** Runs the self-test when EXECVERIFY_SELFTEST_OUT names a file; never throws into activation. */
export function scheduleSelfTest(context: vscode.ExtensionContext, deps: { client: EngineClient }, env: NodeJS.ProcessEnv = process.env): void {
  const out = env.EXECVERIFY_SELFTEST_OUT;
  if (!out) return;
  void (async () => {
    let result: unknown;
    try {
      result = await runSelfTest(context, deps);
    } catch (e) {
      result = { ok: false, checks: [{ name: 'self-test', ok: false, detail: String(e) }] };
    }
    await fs.writeFile(out, JSON.stringify(result, null, 2)).catch(() => {});
  })();
}
