// Editor benchmark (npm run bench:editor): CodeLens and inline results for a
// 2,000-line Python file with a cached trace, through the real engine server
// over stdio (target: under 50 ms), and the panel for a 10,000-step run —
// the server building its rows and the webview logic rendering them.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { PanelDataWireSchema, TraceResultSchema, type PanelData } from '../src/server/protocol';
import { TraceSchema } from '../src/engine/trace/schema';
import { findFunctions } from '../src/engine/python-functions';
import { RunStore } from '../src/server/runs';
import { panelData } from '../src/server/views';
import { startServer } from '../test/server/lsp-client';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const M = require('../media/panel-model.js');

function stats(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `p50 ${q(0.5).toFixed(2)} ms · p95 ${q(0.95).toFixed(2)} ms · max ${s[s.length - 1]!.toFixed(2)} ms (n=${s.length})`;
}

async function time(n: number, fn: (i: number) => Promise<unknown> | unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

/** A 2,000-line module: 200 functions of 10 lines, one of them traced. */
function bigModule(): string {
  const lines: string[] = [];
  for (let f = 0; lines.length < 2000; f++) {
    lines.push(
      `def f${f}(xs):`,
      '    """Sum the even items."""',
      '    total = 0',
      '    for x in xs:',
      '        if x % 2 == 0:',
      '            total += x',
      '        else:',
      '            total -= 1',
      '    return total',
      '',
    );
  }
  return lines.slice(0, 2000).join('\n') + '\n';
}

async function main(): Promise<void> {
  const ws = mkdtempSync(path.join(tmpdir(), 'ev-bench-'));
  const file = path.join(ws, 'big.py');
  const source = bigModule();
  writeFileSync(file, source);
  const uri = pathToFileURL(file).href;
  const server = await startServer({ rootPath: ws, settings: { limits: { steps: 200_000 } } });
  try {
    await server.open(file, source);
    const c = server.connection;
    console.log(`ExecVerify editor benchmark — ${source.split('\n').length - 1}-line file, Node ${process.version}`);

    // A cached trace with a prediction, its verdict, and a whole-call verification (baseline answers).
    const run = TraceResultSchema.parse(await c.sendRequest('execverify/trace', { uri, entry: 'f150(list(range(40)))' }));
    const data = PanelDataWireSchema.parse(await c.sendRequest('execverify/panel', { runId: run.runId }));
    const step = data.rows.find((r) => r.event === 'line')!.step;
    const p = (await c.sendRequest('execverify/predict', { runId: run.runId, step })) as { id: string };
    await c.sendRequest('execverify/reveal', { predictionId: p.id });
    await c.sendRequest('execverify/verify', { runId: run.runId });
    await c.sendNotification('execverify/stepChanged', { runId: run.runId, step, uri, line: data.rows[step]!.line });

    const lens = () => c.sendRequest('textDocument/codeLens', { textDocument: { uri } }) as Promise<unknown[]>;
    const hints = () =>
      c.sendRequest('textDocument/inlayHint', {
        textDocument: { uri },
        range: { start: { line: 0, character: 0 }, end: { line: 2000, character: 0 } },
      }) as Promise<unknown[]>;
    const lenses = await lens();
    const inline = await hints();
    await time(20, lens); // warm-up
    console.log(`\nCodeLens (${lenses.length} lenses), unchanged document:   ${stats(await time(200, lens))}`);
    let version = 1;
    const edited = await time(100, async () => {
      version += 1;
      await c.sendNotification('textDocument/didChange', {
        textDocument: { uri, version },
        contentChanges: [{ range: { start: { line: 1999, character: 0 }, end: { line: 1999, character: 0 } }, text: ' ' }],
      });
      await lens();
    });
    console.log(`CodeLens after an edit (full rescan):           ${stats(edited)}`);
    console.log(`Inline results (${inline.length} inlay hints, full file):  ${stats(await time(200, hints))}`);
    const both = await time(200, () => Promise.all([lens(), hints()]));
    const p95 = [...both].sort((a, b) => a - b)[Math.floor(0.95 * both.length)]!;
    console.log(`CodeLens + inline results together:              ${stats(both)}  → target < 50 ms: ${p95 < 50 ? 'met' : 'MISSED'} (p95)`);

    // The server's own share, in this process (no IPC, no scheduling noise from a busy machine).
    console.log(`In-process: find the functions of 2,000 lines:   ${stats(await time(200, () => findFunctions(source)))}`);

    // The panel on a 10,000-step run.
    const long = TraceResultSchema.parse(
      await c.sendRequest('execverify/trace', {
        uri,
        entry: 'f3(list(range(3800)))',
        limits: { steps: 100_000, traceBytes: 256 * 1024 * 1024, wallTimeMs: 60_000 },
      }),
    );
    if (long.steps < 10_000) throw new Error(`the long run has only ${long.steps} steps (${long.outcome})`);
    const longTrace = TraceSchema.parse(
      TraceResultSchema.parse(
        await c.sendRequest('execverify/trace', {
          uri,
          entry: 'f3(list(range(3800)))',
          limits: { steps: 100_000, traceBytes: 256 * 1024 * 1024, wallTimeMs: 60_000 },
          wantTrace: true,
        }),
      ).trace,
    );
    const store = new RunStore();
    const stored = store.addRun({ uri, file, entry: 'f3(list(range(3800)))', trace: longTrace });
    console.log(`\nIn-process: panel rows for ${longTrace.steps.length} steps (server side):  ${stats(await time(10, () => panelData(stored, store)))}`);
    let panel: PanelData | undefined;
    const fetch = await time(10, async () => {
      panel = PanelDataWireSchema.parse(await c.sendRequest('execverify/panel', { runId: long.runId }));
    });
    console.log(`Panel data for a ${long.steps}-step run (server rows + JSON over stdio + zod): ${stats(fetch)}`);
    const message = { type: 'data', data: panel };
    let state = M.initialState();
    console.log(
      `Panel model: rows from data (${panel!.rows.length}):               ${stats(await time(20, () => (state = M.applyMessage(M.initialState(), message))))}`,
    );
    const frame = await time(200, (i) => {
      const w = M.virtualWindow({ scrollTop: (i * 997 * 22) % (state.rows.length * 22), viewportHeight: 800, rowHeight: 22, total: state.rows.length });
      let html = '';
      for (let r = w.start; r < w.end; r++) html += M.renderRow(state.rows[r], r === state.selected);
      return html.length;
    });
    console.log(`Panel model: one scroll frame (virtual window):  ${stats(frame)}`);
    const all = await time(5, () => state.rows.map((r: unknown) => M.renderRow(r, false)).join('').length);
    console.log(`Panel model: all rows at once (no virtualisation, for comparison): ${stats(all)}`);
    const keys = await time(1000, () => (state = M.handleKey(state, 'ArrowDown', 36).state));
    console.log(`Panel model: keyboard step:                      ${stats(keys)}`);
  } finally {
    await server.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
