// Model client benchmark (not part of the test suite): requests per second at
// concurrency 1, 16 and 64 against an instant local OpenAI-compatible server,
// the client's overhead against a bare node:http loop in the same run, and the
// share of prompt tokens that questions about one traced call have in common
// (what a server's prefix cache can reuse).
//
//   npm run bench:model [-- --requests 1000 --rounds 9 --concurrency 1,16,64]
//
// The server runs in its own process so its work does not share the client's
// event loop; bare loop and client send the same body and parse the same JSON.
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ModelClient } from '../src/engine/model/client';
import { chatPrompt } from '../src/engine/model/prompt';
import { buildRequestBody } from '../src/engine/model/wire';
import { measurePrefixSharing } from './model-prefix';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '9' },
    concurrency: { type: 'string', default: '1,16,64' },
  },
});
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const LEVELS = values.concurrency.split(',').map(Number);

async function startServer(): Promise<{ url: string; stop: () => void }> {
  const root = path.resolve(__dirname, '..');
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/openai-server.ts', '--quiet'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\S+)/.exec(String(d));
      if (m) resolve(m[1]!);
    });
  });
  return { url, stop: () => child.kill() };
}

const prompt = chatPrompt([
  { role: 'system', content: 'You are an execution-reasoning model. Answer inside <answer></answer>.' },
  {
    role: 'user',
    content:
      'def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n\nQuestion1: Fill the assertion statement.\nassert f([1, 2]) == ??',
  },
]);

function median(xs: number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Runs `total` requests with `concurrency` workers; returns requests/s and this process's CPU µs per request. */
async function loop(concurrency: number, total: number, one: () => Promise<unknown>): Promise<{ rps: number; cpuUs: number }> {
  let started = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (started++ < total) await one();
    }),
  );
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { rps: (total / wall) * 1000, cpuUs: (cpu.user + cpu.system) / total };
}

async function throughput(url: string) {
  const target = new URL(`${url}/chat/completions`);
  // The same request body the client sends; the bare loop serialises it per request as any client must.
  const request = buildRequestBody({ model: 'test-model', api: 'chat' }, { prompt }, 1, { temperature: 0, maxTokens: 64 }, false);
  const rows: { concurrency: number; bare: number; client: number; overhead: number; bareCpu: number; clientCpu: number }[] = [];
  for (const concurrency of LEVELS) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const bare = () =>
      new Promise<unknown>((resolve, reject) => {
        const body = JSON.stringify(request);
        const req = http.request(
          {
            hostname: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'POST',
            agent,
            headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const client = new ModelClient({ baseURL: url, model: 'test-model', concurrency, temperature: 0, maxTokens: 64, retries: 0 });
    const viaClient = () => client.complete({ prompt });
    // Warm both paths (JIT, sockets), then alternate rounds so drift hits both alike; keep each side's best.
    await loop(concurrency, Math.min(500, REQUESTS), bare);
    await loop(concurrency, Math.min(500, REQUESTS), viaClient);
    // Many short alternating rounds, then medians: on a shared machine the load
    // changes by the second, and alternation exposes both sides to it alike.
    const bareRuns: { rps: number; cpuUs: number }[] = [];
    const clientRuns: { rps: number; cpuUs: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      bareRuns.push(await loop(concurrency, REQUESTS, bare));
      clientRuns.push(await loop(concurrency, REQUESTS, viaClient));
    }
    const bareRps = median(bareRuns.map((x) => x.rps));
    const clientRps = median(clientRuns.map((x) => x.rps));
    const bareCpu = median(bareRuns.map((x) => x.cpuUs));
    const clientCpu = median(clientRuns.map((x) => x.cpuUs));
    const stats = client.stats();
    if (stats.failures > 0) throw new Error(`the client failed ${stats.failures} requests during the benchmark`);
    client.close();
    agent.destroy();
    rows.push({ concurrency, bare: bareRps, client: clientRps, overhead: 1 - clientRps / bareRps, bareCpu, clientCpu });
  }
  return rows;
}

/** Rough tokens: words and single punctuation marks (close to BPE counts for code). */
function tokens(text: string): string[] {
  return text.match(/\w+|[^\w\s]/g) ?? [];
}

/** Share of all prompt tokens that lie in the prefix every prompt shares. */
export function prefixShare(prompts: string[]): { prompts: number; tokens: number; commonPrefix: number; share: number } {
  const toks = prompts.map(tokens);
  if (toks.length === 0) return { prompts: 0, tokens: 0, commonPrefix: 0, share: 0 };
  let lcp = Math.min(...toks.map((t) => t.length));
  for (const t of toks.slice(1)) {
    let i = 0;
    while (i < lcp && t[i] === toks[0]![i]) i++;
    lcp = i;
  }
  const total = toks.reduce((s, t) => s + t.length, 0);
  return { prompts: prompts.length, tokens: total, commonPrefix: lcp, share: total ? (lcp * toks.length) / total : 0 };
}

async function main() {
  const server = await startServer();
  try {
    console.log(`model client throughput: ${ROUNDS} alternating rounds of ${REQUESTS} requests per side, medians; instant local server (separate process)`);
    console.log('throughput overhead = 1 − client req/s ÷ bare req/s (target ≤ 15%); CPU = client-process CPU µs per request (robust on a busy machine)');
    console.log('concurrency   bare req/s   client req/s   overhead   bare CPU µs/req   client CPU µs/req   extra CPU');
    for (const row of await throughput(server.url)) {
      console.log(
        `${String(row.concurrency).padStart(11)}   ${row.bare.toFixed(0).padStart(10)}   ${row.client.toFixed(0).padStart(12)}   ${(row.overhead * 100).toFixed(1).padStart(7)}%` +
          `   ${row.bareCpu.toFixed(0).padStart(15)}   ${row.clientCpu.toFixed(0).padStart(17)}   ${((row.clientCpu / row.bareCpu - 1) * 100).toFixed(0).padStart(8)}%` +
          `${row.overhead > 0.15 ? '  (throughput overhead above the 15% target)' : ''}`,
      );
    }
    console.log(
      `load average while measuring: ${os
        .loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')} on ${os.cpus().length} CPUs`,
    );
  } finally {
    server.stop();
  }
  await measurePrefixSharing(prefixShare);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
