// What the extension needs from the engine server, apart from how it is
// started (client.ts): a typed request/notify interface and the errors it
// raises. Free of vscode-languageclient so the commands are unit-testable.
import * as vscode from 'vscode';
import type { ZodType } from 'zod';
import { ErrorCodeSchema, type ErrorCode, type InitOptions } from '../server/protocol';
import { readSettings } from './settings';

/** A failed engine request, with the server's error code so commands can offer the right fix. */
export class EngineRequestError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'EngineRequestError';
  }
}

/** What the rest of the extension needs from the engine server. */
export interface EngineClient {
  /** Sends a request and validates the answer with `schema`. */
  request<T>(method: string, params: unknown, schema: ZodType<T>, token?: vscode.CancellationToken): Promise<T>;
  notify(method: string, params: unknown): void;
  onNotification(method: string, handler: (params: unknown) => void): vscode.Disposable;
  /** Answers a request the server sends (execverify/dap); a thrown Error reaches the server as its message. */
  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): vscode.Disposable;
  isRunning(): boolean;
}

export function initializationOptions(workspaceTrusted: boolean): InitOptions {
  return {
    settings: readSettings(workspaceTrusted),
    inline: 'notifications',
    trusted: workspaceTrusted,
    workspaceRoot: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
  };
}

/** The server's environment: the parent's, plus the API key when one is stored. */
export function serverEnvironment(apiKey: string | undefined, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  delete env.EXECVERIFY_API_KEY;
  if (apiKey) env.EXECVERIFY_API_KEY = apiKey;
  return env;
}

/** LSP "request cancelled". */
const REQUEST_CANCELLED = -32800;

/** Turns whatever a request threw (a JSON-RPC ResponseError or anything else) into an EngineRequestError. */
export function toEngineError(e: unknown): EngineRequestError {
  if (e instanceof EngineRequestError) return e;
  const rpc = e as { code?: unknown; data?: { code?: unknown }; message?: unknown } | undefined;
  if (rpc && typeof rpc.code === 'number' && typeof rpc.message === 'string') {
    if (rpc.code === REQUEST_CANCELLED) return new EngineRequestError('cancelled', 'Cancelled.');
    const code = ErrorCodeSchema.safeParse(rpc.data?.code);
    return new EngineRequestError(code.success ? code.data : 'internal', rpc.message);
  }
  const message = e instanceof Error ? e.message : String(e);
  return new EngineRequestError('internal', `The ExecVerify engine failed: ${message}. See Output › ExecVerify.`);
}
