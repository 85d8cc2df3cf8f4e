// A small Debug Adapter Protocol client over a pair of streams: the engine's
// side of a debugger it drives (debugpy's adapter, lldb-dap). Content-Length
// framing, requests matched to responses by seq, events to listeners. No
// vscode import: the tracer and the live-step logic run in plain Node.
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { DebugProtocol } from '@vscode/debugprotocol';

/** A request the adapter refused (`success: false`), or a connection that ended first. */
export class DapError extends Error {
  constructor(
    readonly command: string,
    message: string,
  ) {
    super(`${command}: ${message}`);
  }
}

interface Pending {
  command: string;
  resolve(body: unknown): void;
  reject(err: Error): void;
}

/** The adapter's header block may not grow past this without a Content-Length: it is not DAP. */
const MAX_HEADER = 4096;

export class DapClient extends EventEmitter {
  private seq = 1;
  private buffer = Buffer.alloc(0);
  private readonly pending = new Map<number, Pending>();
  private closed: Error | undefined;

  constructor(
    input: Readable,
    private readonly output: Writable,
  ) {
    super();
    input.on('data', (chunk: Buffer) => this.receive(chunk));
    input.on('end', () => this.fail(new Error('the debug adapter closed its output')));
    input.on('error', (err: Error) => this.fail(err));
    output.on('error', (err: Error) => this.fail(err));
  }

  /** Sends `command` and resolves to the response's body; rejects with DapError when refused. */
  request<T = unknown>(command: string, args?: unknown): Promise<T> {
    if (this.closed) return Promise.reject(new DapError(command, this.closed.message));
    const seq = this.seq++;
    const message: DebugProtocol.Request = { seq, type: 'request', command, arguments: args };
    return new Promise<T>((resolve, reject) => {
      this.pending.set(seq, { command, resolve: resolve as (b: unknown) => void, reject });
      const json = Buffer.from(JSON.stringify(message), 'utf8');
      this.output.write(`Content-Length: ${json.length}\r\n\r\n`);
      this.output.write(json);
    });
  }

  /**
   * The next event named `event` (and matching `when`), or the connection's
   * end as an error. A wait is often set up before the request that causes
   * the event, and left behind when that request fails (a tracer halted, the
   * adapter gone): so the end of the connection rejects it for whoever awaits
   * it, and is never an unhandled rejection when nobody does any more.
   */
  waitFor<T extends DebugProtocol.Event>(event: string, when: (e: T) => boolean = () => true): Promise<T> {
    const wait = this.wait<T>(event, when);
    wait.catch(() => undefined);
    return wait;
  }

  private wait<T extends DebugProtocol.Event>(event: string, when: (e: T) => boolean): Promise<T> {
    if (this.closed) return Promise.reject(new DapError(`waiting for ${event}`, this.closed.message));
    return new Promise<T>((resolve, reject) => {
      const onEvent = (e: T) => {
        if (!when(e)) return;
        cleanup();
        resolve(e);
      };
      const onClose = (err: Error) => {
        cleanup();
        reject(new DapError(`waiting for ${event}`, err.message));
      };
      const cleanup = () => {
        this.off(event, onEvent);
        this.off('close', onClose);
      };
      this.on(event, onEvent);
      this.on('close', onClose);
    });
  }

  /** Ends every pending request with `err`; later requests fail at once. */
  fail(err: Error): void {
    if (this.closed) return;
    this.closed = err;
    for (const p of this.pending.values()) p.reject(new DapError(p.command, err.message));
    this.pending.clear();
    this.emit('close', err);
  }

  private receive(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) {
        if (this.buffer.length > MAX_HEADER) this.fail(new Error('the debug adapter sent something that is not DAP'));
        return;
      }
      const header = this.buffer.subarray(0, headerEnd).toString('ascii');
      const match = /Content-Length:\s*(\d+)/i.exec(header);
      if (!match) return this.fail(new Error(`the debug adapter sent a header without Content-Length: ${header.slice(0, 80)}`));
      const length = Number(match[1]);
      const start = headerEnd + 4;
      if (this.buffer.length < start + length) return;
      const body = this.buffer.subarray(start, start + length).toString('utf8');
      this.buffer = this.buffer.subarray(start + length);
      let message: DebugProtocol.ProtocolMessage;
      try {
        message = JSON.parse(body) as DebugProtocol.ProtocolMessage;
      } catch {
        return this.fail(new Error('the debug adapter sent a message that is not JSON'));
      }
      this.dispatch(message);
    }
  }

  private dispatch(message: DebugProtocol.ProtocolMessage): void {
    if (message.type === 'response') {
      const r = message as DebugProtocol.Response;
      const p = this.pending.get(r.request_seq);
      if (!p) return;
      this.pending.delete(r.request_seq);
      if (r.success) p.resolve(r.body);
      else p.reject(new DapError(p.command, r.message ?? 'failed'));
    } else if (message.type === 'event') {
      const e = message as DebugProtocol.Event;
      this.emit(e.event, e);
      this.emit('*', e);
    } else if (message.type === 'request') {
      // Reverse requests (runInTerminal, startDebugging): we launch nothing
      // on the adapter's behalf, and say so rather than leave it waiting.
      const q = message as DebugProtocol.Request;
      const reply: DebugProtocol.Response = {
        seq: this.seq++,
        type: 'response',
        request_seq: q.seq,
        command: q.command,
        success: false,
        message: `${q.command} is not supported by this client`,
      };
      const json = Buffer.from(JSON.stringify(reply), 'utf8');
      this.output.write(`Content-Length: ${json.length}\r\n\r\n`);
      this.output.write(json);
    }
  }
}
