// The HTTP transport under the openai SDK: a `fetch` built on node:http with a
// keep-alive agent. Node's built-in fetch (undici) costs about three times a
// bare node:http round trip on a local server, which would make the client the
// bottleneck in front of a fast vLLM; this one stays close to the bare loop.
// It also enforces the two limits fetch cannot: a cap on response size and a
// real abort of the socket (streams included) when the signal fires.
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

/** Raised (as the fetch rejection or the body stream's error) when a response exceeds the byte cap. */
export class ResponseTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`the response exceeded ${limitBytes} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason as unknown;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new Error('the request was aborted');
  err.name = 'AbortError';
  (err as Error & { cause?: unknown }).cause = reason;
  return err;
}

function toHeaders(raw: http.IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else if (value !== undefined) headers.set(key, value);
  }
  return headers;
}

/** The read-only part of the Headers interface the SDK uses, over node's parsed headers. */
export class PlainHeaders {
  constructor(private readonly raw: http.IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
  has(name: string): boolean {
    return this.raw[name.toLowerCase()] !== undefined;
  }
  *entries(): IterableIterator<[string, string]> {
    for (const key of Object.keys(this.raw)) yield [key, this.get(key) ?? ''];
  }
  keys(): IterableIterator<string> {
    return Object.keys(this.raw)[Symbol.iterator]();
  }
  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }
  forEach(fn: (value: string, key: string) => void): void {
    for (const [key, value] of this.entries()) fn(value, key);
  }
  [Symbol.iterator]() {
    return this.entries();
  }
}

/**
 * A complete (non-streaming) response. The web Response class costs more than
 * the whole round trip on a local server, and the SDK only needs this much of it.
 */
class BufferedResponse {
  readonly ok: boolean;
  readonly headers: PlainHeaders;
  readonly body = null;
  readonly redirected = false;
  readonly type = 'basic';
  bodyUsed = false;
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly url: string,
    raw: http.IncomingHttpHeaders,
    private readonly bytes: Buffer,
  ) {
    this.ok = status >= 200 && status < 300;
    this.headers = new PlainHeaders(raw);
  }
  async text(): Promise<string> {
    this.bodyUsed = true;
    return this.bytes.toString('utf8');
  }
  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    this.bodyUsed = true;
    return this.bytes.buffer.slice(this.bytes.byteOffset, this.bytes.byteOffset + this.bytes.byteLength) as ArrayBuffer;
  }
}

/**
 * The state of one postJson exchange. Methods rather than closures made per
 * request: cheaper, and it is the abort listener itself (handleEvent).
 */
class PendingExchange {
  settled = false;
  timer: NodeJS.Timeout | undefined;
  req: http.ClientRequest | undefined;
  constructor(
    private readonly resolve: (value: Exchange) => void,
    private readonly reject: (err: Error) => void,
    private readonly signal: AbortSignal | undefined,
  ) {}
  succeed(value: Exchange): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this);
    this.resolve(value);
  }
  fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this);
    this.req?.destroy();
    this.reject(err);
  }
  /** The caller's signal fired. */
  handleEvent(): void {
    this.fail(abortError(this.signal!));
  }
}

/** Raised by postJson when the whole exchange took longer than its timeout. */
export class TransportTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no complete answer within ${timeoutMs} ms`);
    this.name = 'TransportTimeoutError';
  }
}

/** [name, value, name, value, …] for http.request: host, the given headers, content-length. */
function headerList(headers: Record<string, string>, host: string, length: number): string[] {
  const list = ['host', host];
  for (const name in headers) list.push(name, headers[name]!);
  list.push('content-length', String(length));
  return list;
}

/** A complete JSON exchange: the status, the headers and the body text. */
export interface Exchange {
  status: number;
  headers: PlainHeaders;
  text: string;
}

export interface Transport {
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /**
   * POSTs a JSON body and reads the whole answer: the hot path for
   * non-streaming requests, with no web-stream or Response objects at all.
   */
  postJson(url: string | URL, body: string, headers: Record<string, string>, options: { signal?: AbortSignal; timeoutMs: number }): Promise<Exchange>;
  /** Closes idle keep-alive sockets. */
  close(): void;
}

export function createTransport(options: { maxResponseBytes: number; maxSockets?: number }): Transport {
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? 256, keepAliveMsecs: 1000 };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  const limit = options.maxResponseBytes;

  function fetchImpl(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : new URL(input.url);
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const headers: Record<string, string> = {};
    const given = init.headers;
    if (given instanceof Headers) given.forEach((value, key) => (headers[key] = value));
    else if (Array.isArray(given)) for (const [key, value] of given) headers[key!.toLowerCase()] = value!;
    else if (given) for (const [key, value] of Object.entries(given)) headers[key.toLowerCase()] = String(value);
    let body: Buffer | undefined;
    if (typeof init.body === 'string') body = Buffer.from(init.body);
    else if (init.body instanceof Uint8Array) body = Buffer.from(init.body);
    else if (init.body != null) return Promise.reject(new TypeError('transport: only string or byte bodies are supported'));
    if (body) headers['content-length'] = String(body.length);
    const secure = url.protocol === 'https:';

    return new Promise<Response>((resolve, reject) => {
      const req = (secure ? https : http).request({
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || (secure ? 443 : 80),
        path: url.pathname + url.search,
        method: init.method ?? 'GET',
        headers,
        agent: secure ? httpsAgent : httpAgent,
      });
      let settled = false;
      const onAbort = () => {
        const err = abortError(signal!);
        req.destroy(err);
        if (!settled) {
          settled = true;
          reject(err);
        }
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const detach = () => signal?.removeEventListener('abort', onAbort);

      req.on('error', (err) => {
        detach();
        if (!settled) {
          settled = true;
          reject(err);
        }
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > limit) {
          res.destroy();
          req.destroy();
          detach();
          settled = true;
          reject(new ResponseTooLargeError(limit));
          return;
        }
        const streaming = (res.headers['content-type'] ?? '').includes('text/event-stream');
        if (!streaming) {
          // Buffer small bodies whole: cheaper than a web stream and lets the size cap reject up front.
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) {
              res.destroy();
              req.destroy();
              detach();
              if (!settled) {
                settled = true;
                reject(new ResponseTooLargeError(limit));
              }
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            detach();
            if (settled) return;
            settled = true;
            resolve(new BufferedResponse(status, res.statusMessage ?? '', url.href, res.headers, Buffer.concat(chunks)) as unknown as Response);
          });
          res.on('error', (err) => {
            detach();
            if (!settled) {
              settled = true;
              reject(err);
            }
          });
          return;
        }
        // A stream: hand the body over as it arrives; the abort listener stays
        // attached so cancelling mid-stream destroys the socket.
        let size = 0;
        const counted = new Readable({
          read() {
            res.resume();
          },
        });
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) {
            res.destroy();
            counted.destroy(new ResponseTooLargeError(limit));
            return;
          }
          if (!counted.push(chunk)) res.pause();
        });
        res.on('end', () => {
          detach();
          counted.push(null);
        });
        res.on('error', (err) => counted.destroy(err));
        res.on('close', () => {
          if (!res.complete && !counted.destroyed)
            counted.destroy(signal?.aborted ? abortError(signal) : new Error('the connection closed in the middle of the stream'));
          detach();
        });
        settled = true;
        resolve(
          new Response(Readable.toWeb(counted) as unknown as ReadableStream<Uint8Array>, {
            status,
            statusText: res.statusMessage ?? '',
            headers: toHeaders(res.headers),
          }),
        );
      });
      req.end(body);
    });
  }

  // Where a URL points, worked out once per URL object (the client reuses two).
  const targets = new WeakMap<URL, { secure: boolean; hostname: string; port: string | number; path: string; host: string }>();

  function postJson(url: string | URL, body: string, headers: Record<string, string>, options: { signal?: AbortSignal; timeoutMs: number }): Promise<Exchange> {
    const { signal, timeoutMs } = options;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const parsed = typeof url === 'string' ? new URL(url) : url;
    let target = targets.get(parsed);
    if (!target) {
      const secure = parsed.protocol === 'https:';
      // URL.host is what node would send as Host: brackets kept, default port left out.
      target = {
        secure,
        hostname: parsed.hostname.replace(/^\[|\]$/g, ''),
        port: parsed.port || (secure ? 443 : 80),
        path: parsed.pathname + parsed.search,
        host: parsed.host,
      };
      targets.set(parsed, target);
    }
    const { secure } = target;
    return new Promise<Exchange>((resolve, reject) => {
      const pending = new PendingExchange(resolve, reject, signal);
      pending.timer = setTimeout(() => pending.fail(new TransportTimeoutError(timeoutMs)), timeoutMs);
      signal?.addEventListener('abort', pending, { once: true });
      const req = (secure ? https : http).request(
        {
          hostname: target.hostname,
          port: target.port,
          path: target.path,
          method: 'POST',
          // Headers as a flat list are written once, as given, rather than
          // stored one by one (setHeader) and written later: about as much
          // again as the rest of the transport on a local server. That form
          // adds no Host header, so it is in the list.
          headers: headerList(headers, target.host, Buffer.byteLength(body)),
          agent: secure ? httpsAgent : httpAgent,
        },
        (res) => {
          const declared = Number(res.headers['content-length']);
          if (Number.isFinite(declared) && declared > limit) {
            res.destroy();
            pending.fail(new ResponseTooLargeError(limit));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > limit) {
              res.destroy();
              pending.fail(new ResponseTooLargeError(limit));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            if (pending.settled) return;
            pending.succeed({ status: res.statusCode ?? 0, headers: new PlainHeaders(res.headers), text: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', (err) => pending.fail(err));
          res.on('close', () => {
            if (!res.complete) pending.fail(new Error('the connection closed before the answer was complete'));
          });
        },
      );
      pending.req = req;
      req.on('error', (err) => pending.fail(err));
      // The body goes out as a string, as any plain client sends it: no Buffer copy.
      req.end(body, 'utf8');
    });
  }

  return {
    fetch: fetchImpl,
    postJson,
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
