// Reads the `execverify.*` settings into the plain object the engine server
// parses (src/server/protocol.ts SettingsSchema is the one definition). In an
// untrusted workspace the settings that name an executable, an endpoint or a
// path come from the user's own settings only, never from the workspace.
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
export type SettingKey = (typeof SETTING_KEYS)[number];

/**
 * The settings a workspace may not set while it is untrusted: the interpreter
 * that would run, the endpoint the stored API key would go to, and where
 * samples are written. package.json lists the same keys as
 * `capabilities.untrustedWorkspaces.restrictedConfigurations`.
 */
export const RESTRICTED_KEYS: readonly SettingKey[] = ['pythonPath', 'baseUrl', 'datasetDir'];

/** One setting, as VS Code would apply it, or (untrusted, restricted) from user or default scope only. */
function readOne(config: vscode.WorkspaceConfiguration, key: SettingKey, trusted: boolean): unknown {
  if (trusted || !RESTRICTED_KEYS.includes(key)) return config.get<unknown>(key);
  // Never workspaceValue / workspaceFolderValue: those come from the workspace being distrusted.
  const scopes = config.inspect<unknown>(key);
  return scopes?.globalValue ?? scopes?.defaultValue;
}

export function readSettings(trusted: boolean = vscode.workspace.isTrusted): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration('execverify');
  const out: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    const value = readOne(config, key, trusted);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * The answer to the server's `workspace/configuration` for one section, or
 * undefined when the section is not ours (the language client answers it).
 */
export function settingsSection(section: string | undefined, trusted: boolean = vscode.workspace.isTrusted): { value: unknown } | undefined {
  if (section === 'execverify') return { value: readSettings(trusted) };
  if (section?.startsWith('execverify.')) {
    const settings = readSettings(trusted);
    const key = section.slice('execverify.'.length);
    return { value: Object.hasOwn(settings, key) ? settings[key] : null };
  }
  return undefined;
}
