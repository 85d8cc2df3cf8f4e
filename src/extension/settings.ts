// Reads the `execverify.*` settings into the plain object the engine server
// parses (src/server/protocol.ts SettingsSchema is the one definition).
import * as vscode from 'vscode';

export const SETTING_KEYS = [
  'baseUrl',
  'model',
  'apiMode',
  'template',
  'alpha',
  'gating',
  'requestTimeoutMs',
  'limits',
  'pythonPath',
  'datasetDir',
  'reveal',
] as const;

export function readSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration('execverify');
  const out: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const value = config.get<unknown>(key);
    if (value !== undefined) out[key] = value;
  }
  return out;
}
