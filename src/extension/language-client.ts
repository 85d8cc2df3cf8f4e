// Starts the engine server (dist/server.js) through vscode-languageclient and
// gives the rest of the extension an EngineClient over it. The API key reaches
// the server in its environment at start, never in a protocol message. Every
// settings answer to the server goes through settings.ts, so an untrusted
// workspace never supplies the interpreter, the endpoint or the store path.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  ResponseError,
  State,
  TransportKind,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import type { ZodType } from 'zod';
import { EngineRequestError, initializationOptions, serverEnvironment, toEngineError, type EngineClient } from './engine-client';
import type { Log } from './log';
import type { ApiKeyStore } from './secrets';
import { readSettings, settingsSection } from './settings';

export function registerLanguageClient(
  context: vscode.ExtensionContext,
  deps: { log: Log; secrets: ApiKeyStore; outputChannel: vscode.OutputChannel },
): EngineClient {
  const module = context.asAbsolutePath('dist/server.js');
  const run = { module, transport: TransportKind.stdio, options: { env: serverEnvironment(undefined) } };
  const serverOptions: ServerOptions = { run, debug: run };
  const clientOptions: LanguageClientOptions = {
    // C files for the live lldb session's "Predict next step" lens only (the server scans Python files alone).
    documentSelector: [{ language: 'python' }, { language: 'c' }],
    synchronize: { configurationSection: 'execverify' },
    outputChannel: deps.outputChannel,
    initializationOptions: () => initializationOptions(vscode.workspace.isTrusted),
    middleware: {
      workspace: {
        // The client's own answer reads the merged configuration (workspace values included); ours honours trust.
        configuration: async (params, token, next) => {
          const ours = params.items.map((item) => settingsSection(item.section));
          if (ours.every((o) => o !== undefined)) return ours.map((o) => o!.value);
          const theirs = await next(params, token);
          if (theirs instanceof ResponseError) return theirs;
          return params.items.map((_, i) => (ours[i] ? ours[i].value : theirs[i]));
        },
        didChangeConfiguration: async () => {
          await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { execverify: readSettings() } });
        },
      },
    },
    // The server keeps working on other files when one request fails; never pop up LSP internals.
    initializationFailedHandler: (error) => {
      deps.log(`The ExecVerify engine could not start: ${String(error)}`);
      return false;
    },
  };
  const client = new LanguageClient('execverify', 'ExecVerify engine', serverOptions, clientOptions);
  const starting = (async () => {
    run.options.env = serverEnvironment(await deps.secrets.get());
    await client.start();
  })().catch((e) => {
    deps.log(`The ExecVerify engine did not start: ${e instanceof Error ? e.message : String(e)}`);
    void vscode.window.showErrorMessage('ExecVerify: the engine did not start. See Output › ExecVerify for why.', 'Show Log').then((choice) => {
      if (choice) deps.outputChannel.show();
    });
  });

  context.subscriptions.push(
    { dispose: () => void client.stop().catch(() => {}) },
    // A new key means a new environment: restart the server with it.
    deps.secrets.onDidChange(async () => {
      await starting;
      run.options.env = serverEnvironment(await deps.secrets.get());
      deps.log('API key changed: restarting the engine');
      await client.restart().catch((e) => deps.log(`restart failed: ${String(e)}`));
    }),
  );

  return {
    async request<T>(method: string, params: unknown, schema: ZodType<T>, token?: vscode.CancellationToken): Promise<T> {
      await starting;
      if (client.state !== State.Running)
        throw new EngineRequestError('internal', 'The ExecVerify engine is not running. See Output › ExecVerify, or run "Developer: Reload Window".');
      let raw: unknown;
      try {
        raw = token ? await client.sendRequest(method, params, token) : await client.sendRequest(method, params);
      } catch (e) {
        throw toEngineError(e);
      }
      const parsed = schema.safeParse(raw);
      if (!parsed.success)
        throw new EngineRequestError('internal', `The engine answered ${method} with an unexpected shape (${parsed.error.issues[0]?.message ?? 'invalid'}).`);
      return parsed.data;
    },
    notify(method, params) {
      void starting.then(() => {
        if (client.state === State.Running) void client.sendNotification(method, params);
      });
    },
    onNotification(method, handler) {
      // Handlers registered before start are kept by the client across restarts.
      return client.onNotification(method, handler);
    },
    onRequest(method, handler) {
      // Kept by the client across restarts, as notification handlers are.
      return client.onRequest(method, async (params: unknown) => {
        try {
          return await handler(params);
        } catch (e) {
          return new ResponseError(-32001, e instanceof Error ? e.message : String(e));
        }
      });
    },
    isRunning: () => client.state === State.Running,
  };
}
