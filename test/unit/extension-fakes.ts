// A scripted EngineClient for the extension's unit tests: answers requests
// from handlers, records what was sent, and lets a test push notifications.
import type { ZodType } from 'zod';
import { EngineRequestError, type EngineClient } from '../../src/extension/engine-client';
import type { ErrorCode } from '../../src/server/protocol';
import { Disposable } from '../support/fake-vscode';

type Handler = (params: unknown) => unknown;

export class FakeEngineClient implements EngineClient {
  readonly requests: { method: string; params: unknown }[] = [];
  readonly notifications: { method: string; params: unknown }[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly listeners = new Map<string, ((p: unknown) => void)[]>();
  running = true;

  on(method: string, handler: Handler): this {
    this.handlers.set(method, handler);
    return this;
  }

  /** Makes `method` fail as the server would, with an error code. */
  fail(method: string, code: ErrorCode, message: string): this {
    return this.on(method, () => {
      throw new EngineRequestError(code, message);
    });
  }

  /** The cancellation token each request came with, in order (undefined: none). */
  readonly tokens: ({ isCancellationRequested: boolean } | undefined)[] = [];

  async request<T>(method: string, params: unknown, schema: ZodType<T>, token?: { isCancellationRequested: boolean }): Promise<T> {
    this.requests.push({ method, params });
    this.tokens.push(token);
    const h = this.handlers.get(method);
    if (!h) throw new EngineRequestError('internal', `no fake handler for ${method}`);
    return schema.parse(await h(params));
  }

  notify(method: string, params: unknown): void {
    this.notifications.push({ method, params });
  }

  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    this.listeners.set(method, [...(this.listeners.get(method) ?? []), handler]);
    return new Disposable(() =>
      this.listeners.set(
        method,
        (this.listeners.get(method) ?? []).filter((h) => h !== handler),
      ),
    );
  }

  readonly requestHandlers = new Map<string, (params: unknown) => Promise<unknown>>();

  onRequest(method: string, handler: (params: unknown) => Promise<unknown>): Disposable {
    this.requestHandlers.set(method, handler);
    return new Disposable(() => this.requestHandlers.delete(method));
  }

  /** Test side: the server sends a request (execverify/dap). */
  serverRequest(method: string, params: unknown): Promise<unknown> {
    const h = this.requestHandlers.get(method);
    if (!h) return Promise.reject(new Error(`no client handler for ${method}`));
    return h(params);
  }

  /** Test side: the server sends a notification. */
  emit(method: string, params: unknown): void {
    for (const h of this.listeners.get(method) ?? []) h(params);
  }

  isRunning(): boolean {
    return this.running;
  }

  methods(): string[] {
    return this.requests.map((r) => r.method);
  }
}

export const tick = () => new Promise((r) => setImmediate(r));
