// An OpenAI-compatible HTTP server for tests and benchmarks: real HTTP on
// 127.0.0.1, real protocol (/v1/chat/completions, /v1/completions, /v1/models,
// SSE streaming, n > 1, usage), and scriptable failures (429 + Retry-After,
// 5xx, hangs, stalled streams, malformed JSON, connection resets, oversized
// bodies). It counts requests in flight so tests can check concurrency limits.
//
// In a test:
//   const server = await startOpenAIServer({ script: (req) => ({ text: 'hello' }) });
//   ... new ModelClient({ baseURL: server.url, model: 'm' }) ...
//   assert.equal(server.stats.maxInFlight, 4);
//   await server.close();
//
// A `script` is a function from the request to a Reply, or an array of Replies
// used in order (the last one repeats). Without a script the server answers
// every request with the text "ok".
//
// Standalone (for the editor, e2e and manual runs):
//   node --import tsx test/support/openai-server.ts [--port P] [--script FILE] [--latency-ms MS]
// FILE is a .json array of Replies, or a .ts/.mjs module whose default export is
// a script. It prints `listening http://127.0.0.1:P/v1` on stdout.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the server saw: enough for a script to decide and a test to assert. */
export interface RecordedRequest {
  /** 0-based arrival order over the server's life. */
  index: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body, or undefined when there was none or it was not JSON. */
  body: Record<string, unknown> | undefined;
}

/** One answer. Every field is optional; the default is a normal 200 with "ok". */
export interface Reply {
  /** Choice texts. A single string is used for every choice (n > 1 gets n copies). */
  text?: string | string[];
  /** Ignore the request's n and return this many choices (servers that ignore n). */
  choices?: number;
  finishReason?: string;
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Wait this long before sending headers. */
  delayMs?: number;
  /** Streaming: characters per SSE chunk (default 4) and the pause between chunks. */
  chunkChars?: number;
  chunkDelayMs?: number;
  /** Send a non-200 status with this JSON body (an OpenAI error object by default). */
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  /** Send this raw text as the body (with status, default 200, as application/json). */
  raw?: string;
  /** Never answer: headers are not even sent. */
  hang?: boolean;
  /** Streaming: send headers and this many chunks, then go silent (default 1). Non-streaming: headers then silence. */
  stallAfterChunks?: number;
  /** Destroy the socket without answering. */
  reset?: boolean;
  /** Send a 200 JSON body of at least this many bytes (a huge content string). */
  oversizedBytes?: number;
}

export type Script = (request: RecordedRequest) => Reply | Promise<Reply>;

export interface ServerOptions {
  port?: number;
  script?: Script | Reply[];
  /** Models listed at /v1/models (default ['test-model']). */
  models?: string[];
  /** Answer 400 to any request carrying response_format json_schema (servers without structured output). */
  rejectJsonSchema?: boolean;
  /** Keep the full RecordedRequest log (default true; benchmarks turn it off). */
  record?: boolean;
}

export interface ServerStats {
  requests: number;
  inFlight: number;
  maxInFlight: number;
  /** Requests whose client went away before the answer was complete. */
  aborted: number;
}

export interface OpenAIServer {
  /** Base URL including /v1, as an OpenAI client expects it. */
  url: string;
  port: number;
  stats: ServerStats;
  requests: RecordedRequest[];
  /** Replace the script (the request log and stats are kept). */
  setScript(script: Script | Reply[] | undefined): void;
  resetStats(): void;
  close(): Promise<void>;
}

/** Rough token count: whitespace-separated pieces, so tests can predict it. */
export function countTokens(text: string): number {
  const pieces = text.match(/\S+/g);
  return pieces ? pieces.length : 0;
}

function promptText(body: Record<string, unknown> | undefined): string {
  if (!body) return '';
  if (typeof body.prompt === 'string') return body.prompt;
  if (Array.isArray(body.messages)) {
    return body.messages
      .map((m) => (m && typeof m === 'object' && typeof (m as { content?: unknown }).content === 'string' ? (m as { content: string }).content : ''))
      .join('\n');
  }
  return '';
}

function scriptFrom(script: Script | Reply[] | undefined): Script {
  if (!script) return () => ({ text: 'ok' });
  if (typeof script === 'function') return script;
  const replies = script.slice();
  let next = 0;
  return () => {
    const reply = replies[Math.min(next, replies.length - 1)] ?? { text: 'ok' };
    next++;
    return reply;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startOpenAIServer(options: ServerOptions = {}): Promise<OpenAIServer> {
  let script = scriptFrom(options.script);
  const models = options.models ?? ['test-model'];
  const record = options.record ?? true;
  const stats: ServerStats = { requests: 0, inFlight: 0, maxInFlight: 0, aborted: 0 };
  const requests: RecordedRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  let index = 0;
  let created = 1_700_000_000;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      stats.requests++;
      stats.inFlight++;
      stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        stats.inFlight--;
      };
      res.on('finish', finish);
      res.on('close', () => {
        if (!res.writableFinished) stats.aborted++;
        finish();
      });
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> | undefined;
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
      } catch {
        body = undefined;
      }
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const recorded: RecordedRequest = { index: index++, method: req.method ?? 'GET', path, headers: req.headers, body };
      if (record) requests.push(recorded);
      handle(recorded, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `test server script failed: ${(err as Error).message}`, type: 'server_error' } }));
      });
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function sendJson(res: http.ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  async function handle(request: RecordedRequest, res: http.ServerResponse): Promise<void> {
    if (request.method === 'GET' && request.path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: models.map((id) => ({ id, object: 'model', created, owned_by: 'test' })) });
      return;
    }
    const isChat = request.path === '/v1/chat/completions';
    const isCompletion = request.path === '/v1/completions';
    if (request.method !== 'POST' || (!isChat && !isCompletion)) {
      sendJson(res, 404, { error: { message: `no route ${request.method} ${request.path}`, type: 'invalid_request_error' } });
      return;
    }
    if (!request.body) {
      sendJson(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const format = request.body.response_format as { type?: string } | undefined;
    if (options.rejectJsonSchema && format && format.type === 'json_schema') {
      sendJson(res, 400, { error: { message: "response_format 'json_schema' is not supported", type: 'invalid_request_error', param: 'response_format' } });
      return;
    }

    const reply = await script(request);
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (reply.reset) {
      res.socket?.destroy();
      return;
    }
    if (reply.hang) return; // the client's timeout (or close()) ends it
    if (reply.raw !== undefined) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.raw);
      return;
    }
    if (reply.status && reply.status !== 200) {
      sendJson(res, reply.status, reply.json ?? { error: { message: `scripted status ${reply.status}`, type: 'server_error', code: null } }, reply.headers);
      return;
    }

    const model = typeof request.body.model === 'string' ? request.body.model : models[0];
    const requestedN = typeof request.body.n === 'number' ? request.body.n : 1;
    const n = reply.choices ?? requestedN;
    let texts: string[];
    if (reply.oversizedBytes) texts = ['x'.repeat(reply.oversizedBytes)];
    else if (Array.isArray(reply.text)) texts = reply.text.slice(0, n);
    else texts = Array.from({ length: n }, () => (reply.text as string | undefined) ?? 'ok');
    const finishReason = reply.finishReason ?? 'stop';
    const promptTokens = countTokens(promptText(request.body));
    const usage = reply.usage ?? {
      prompt_tokens: promptTokens,
      completion_tokens: texts.reduce((sum, t) => sum + countTokens(t), 0),
    };
    const id = `${isChat ? 'chatcmpl' : 'cmpl'}-${request.index}`;
    created++;

    if (request.body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...reply.headers });
      const object = isChat ? 'chat.completion.chunk' : 'text_completion';
      const chunkChars = Math.max(1, reply.chunkChars ?? 4);
      let sent = 0;
      const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
      for (const [i, text] of texts.entries()) {
        if (isChat) send({ id, object, created, model, choices: [{ index: i, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
        for (let at = 0; at < text.length; at += chunkChars) {
          if (reply.stallAfterChunks !== undefined && sent >= reply.stallAfterChunks) return; // go silent, keep the socket open
          if (res.destroyed) return;
          const piece = text.slice(at, at + chunkChars);
          send(
            isChat
              ? { id, object, created, model, choices: [{ index: i, delta: { content: piece }, finish_reason: null }] }
              : { id, object, created, model, choices: [{ index: i, text: piece, finish_reason: null }] },
          );
          sent++;
          if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
        }
        send(
          isChat
            ? { id, object, created, model, choices: [{ index: i, delta: {}, finish_reason: finishReason }] }
            : { id, object, created, model, choices: [{ index: i, text: '', finish_reason: finishReason }] },
        );
      }
      if (reply.stallAfterChunks !== undefined) return;
      const streamOptions = request.body.stream_options as { include_usage?: boolean } | undefined;
      if (streamOptions?.include_usage) {
        send({ id, object, created, model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
      }
      res.end('data: [DONE]\n\n');
      return;
    }

    if (reply.stallAfterChunks !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"id": "');
      return;
    }
    const choices = texts.map((text, i) =>
      isChat
        ? { index: i, message: { role: 'assistant', content: text }, finish_reason: finishReason, logprobs: null }
        : { index: i, text, finish_reason: finishReason, logprobs: null },
    );
    sendJson(
      res,
      200,
      {
        id,
        object: isChat ? 'chat.completion' : 'text_completion',
        created,
        model,
        choices,
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      },
      reply.headers,
    );
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    stats,
    requests,
    setScript(next) {
      script = scriptFrom(next);
    },
    resetStats() {
      stats.requests = 0;
      stats.maxInFlight = stats.inFlight;
      stats.aborted = 0;
      requests.length = 0;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function standalone(argv: string[]): Promise<void> {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '0' },
      script: { type: 'string' },
      'latency-ms': { type: 'string' },
      'reject-json-schema': { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
  });
  let script: Script | Reply[] | undefined;
  if (values.script) {
    const path = await import('node:path');
    const file = path.resolve(values.script);
    if (file.endsWith('.json')) {
      const fs = await import('node:fs');
      script = JSON.parse(fs.readFileSync(file, 'utf8')) as Reply[];
    } else {
      const { pathToFileURL } = await import('node:url');
      const mod = (await import(pathToFileURL(file).href)) as { default?: Script | { default?: Script } };
      const exported = typeof mod.default === 'function' ? mod.default : mod.default?.default;
      if (typeof exported !== 'function') throw new Error(`${values.script}: default export is not a script function`);
      script = exported;
    }
  }
  const latency = values['latency-ms'] ? Number(values['latency-ms']) : 0;
  if (latency > 0) {
    const inner = scriptFrom(script);
    script = async (req) => ({ delayMs: latency, ...(await inner(req)) });
  }
  const server = await startOpenAIServer({
    port: Number(values.port),
    script,
    rejectJsonSchema: values['reject-json-schema'],
    record: false,
  });
  process.stdout.write(`listening ${server.url}\n`);
  const stop = () => {
    if (!values.quiet) process.stderr.write(`openai-server: ${server.stats.requests} requests, max in flight ${server.stats.maxInFlight}\n`);
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && /openai-server\.[cm]?[jt]s$/.test(process.argv[1])) {
  standalone(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`openai-server: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
