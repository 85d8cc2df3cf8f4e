// Replay adapter on a 1,000,000-event trace recorded by the real tracer:
//   latency p50 / p99 of next, stepIn, stepOut, stepBack, stackTrace, scopes and
//   variables at 100 positions spread across the trace (target p99 < 10 ms each),
//   measured through DAP (DebugClient over a loopback socket), plus the time to
//   index the trace, a whole-trace conditional continue, and the memory used.
// Run: npm run bench:adapter  (not part of the test suite; prints numbers).
//   --trace=FILE   reuse a trace JSON written by an earlier run (--save=FILE)
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { DebugClient } from '@vscode/debugadapter-testsupport';
import type { DebugProtocol } from '@vscode/debugprotocol';
import { replaySessionDeps } from '../src/adapter/node-deps';
import { ReplayDebugSession } from '../src/adapter/replay-debug-session';
import { TracerPool } from '../src/engine/trace/runner';
import { type Trace } from '../src/engine/trace/schema';
import { parseTrace } from '../src/engine/trace/validate';

const EVENTS = 1_000_000;
const POSITIONS = 100;

const PROGRAM = `
def step(x):
    return x * 3 % 1000


def work(n):
    total = 0
    seen = []
    for i in range(n):
        total += step(i)
        if i % 1000 == 0:
            seen.append(total)
    return total
`;

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

async function recordTrace(): Promise<Trace> {
  const cached = arg('trace');
  if (cached) {
    const t0 = performance.now();
    const trace = parseTrace(JSON.parse(fs.readFileSync(cached, 'utf8')));
    console.log(`loaded ${cached}: ${trace.steps.length} events in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return trace;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execverify-adapter-bench-'));
  const file = path.join(dir, 'loop.py');
  fs.writeFileSync(file, PROGRAM);
  const pool = new TracerPool({ size: 1 });
  try {
    const t0 = performance.now();
    // Each loop iteration is 6 events; the steps limit cuts the run at exactly EVENTS.
    const trace = await pool.trace({
      path: file,
      entry: { kind: 'call', expr: 'work(10_000_000)' },
      limits: { steps: EVENTS, wallTimeMs: 600_000, cpuTimeMs: 600_000, traceBytes: 1024 * 1024 * 1024, memoryMb: 4096 },
    });
    console.log(
      `recorded ${trace.steps.length} events with the real tracer (python ${trace.python!.version}, ${trace.python!.backend}) in ${((performance.now() - t0) / 1000).toFixed(1)} s; outcome: ${trace.outcome.kind}`,
    );
    const save = arg('save');
    if (save) fs.writeFileSync(save, JSON.stringify(trace));
    return trace;
  } finally {
    await pool.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const trace = await recordTrace();
  if (trace.steps.length < EVENTS) console.log(`warning: only ${trace.steps.length} events were recorded`);
  global.gc?.();
  const before = process.memoryUsage();

  // The session replays this trace; its recorder hands it over instead of running Python again.
  let session: ReplayDebugSession | undefined;
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    session = new ReplayDebugSession(replaySessionDeps({ recorder: { record: async () => ({ ok: true, trace }) }, cwd: process.cwd() }));
    session.setRunAsServer(true);
    session.start(socket, socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const dc = new DebugClient('node', 'unused', 'execverify');
  dc.defaultTimeout = 120_000;
  await dc.start((server.address() as net.AddressInfo).port);

  const program = trace.files[0]!.path;
  // A reused trace's program may be gone (it was recorded from a temp dir): put the recorded source back.
  let restored: string | undefined;
  if (!fs.existsSync(program)) {
    fs.mkdirSync(path.dirname(program), { recursive: true });
    fs.writeFileSync(program, trace.files[0]!.source);
    restored = path.dirname(program);
  }
  const t0 = performance.now();
  const firstStop = dc.waitForEvent('stopped');
  await dc.initializeRequest({ adapterID: 'execverify', linesStartAt1: true, columnsStartAt1: true, pathFormat: 'path' });
  const configured = dc.waitForEvent('initialized').then(() => dc.configurationDoneRequest());
  await dc.launchRequest({ program, entry: 'work(10_000_000)' } as DebugProtocol.LaunchRequestArguments);
  await configured;
  await firstStop;
  const indexMs = performance.now() - t0;
  global.gc?.();
  const after = process.memoryUsage();

  const samples: Record<string, { start: number; ms: number; cpuMs: number }[]> = {
    next: [],
    stepIn: [],
    stepOut: [],
    stepBack: [],
    stackTrace: [],
    scopes: [],
    variables: [],
    'variables(child)': [],
    evaluate: [],
  };
  // Wall time is what a user feels; CPU time (this process: adapter + client) is the work done,
  // which stays meaningful on a loaded, shared machine where the scheduler adds wall-time outliers.
  const time = async (name: string, fn: () => Promise<unknown>) => {
    const s = performance.now();
    const c = process.cpuUsage();
    const r = await fn();
    const cpu = process.cpuUsage(c);
    samples[name]!.push({ start: s, ms: performance.now() - s, cpuMs: (cpu.user + cpu.system) / 1000 });
    return r;
  };
  // Garbage-collection pauses over a heap that holds a million parsed steps are the main source of
  // outliers (besides a shared, loaded machine): record them to tell the two apart in the report.
  const gcPauses: { start: number; end: number; kind: number }[] = [];
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      gcPauses.push({ start: e.startTime, end: e.startTime + e.duration, kind: (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0 });
  });
  global.gc?.();
  gcObserver.observe({ entryTypes: ['gc'] });
  const move = (name: string, send: () => Promise<unknown>) =>
    time(name, async () => {
      const stopped = dc.waitForEvent('stopped');
      await send();
      await stopped;
    });

  const lineSteps = trace.steps.filter((s) => s.event === 'line' && s.fn === 'work' && s.line === 10).map((s) => s.i);
  for (let k = 0; k < POSITIONS; k++) {
    const target = lineSteps[Math.floor((k / POSITIONS) * (lineSteps.length - 1))]!;
    const jumped = dc.waitForEvent('stopped');
    await dc.customRequest('execverify/jumpToStep', { stepIndex: target });
    await jumped;
    await move('stepIn', () => dc.stepInRequest({ threadId: 1 }));
    await move('stepOut', () => dc.stepOutRequest({ threadId: 1 }));
    await move('next', () => dc.nextRequest({ threadId: 1 }));
    await move('stepBack', () => dc.stepBackRequest({ threadId: 1 }));
    await move('stepBack', () => dc.stepBackRequest({ threadId: 1 }));
    await move('next', () => dc.nextRequest({ threadId: 1 }));
    const st = (await time('stackTrace', () => dc.stackTraceRequest({ threadId: 1 }))) as DebugProtocol.StackTraceResponse;
    const frameId = st.body.stackFrames[0]!.id;
    const scopes = (await time('scopes', () => dc.scopesRequest({ frameId }))) as DebugProtocol.ScopesResponse;
    const vars = (await time('variables', () =>
      dc.variablesRequest({ variablesReference: scopes.body.scopes[0]!.variablesReference }),
    )) as DebugProtocol.VariablesResponse;
    const seen = vars.body.variables.find((v) => v.name === 'seen');
    if (seen?.variablesReference) await time('variables(child)', () => dc.variablesRequest({ variablesReference: seen.variablesReference }));
    await time('evaluate', () => dc.evaluateRequest({ expression: 'total % 7 == 3 and len(seen) >= 0', frameId, context: 'watch' }));
  }

  // Worst case: a conditional breakpoint evaluated on every run of a line across the whole trace.
  await dc.customRequest('execverify/jumpToStep', { stepIndex: lineSteps[0]! });
  await dc.setBreakpointsRequest({ source: { path: program }, breakpoints: [{ line: 11, condition: 'i == -1' }] });
  const ws = performance.now();
  const ended = dc.waitForEvent('terminated');
  await dc.continueRequest({ threadId: 1 });
  await ended;
  const wholeTraceMs = performance.now() - ws;

  console.log(`\ntrace: ${trace.steps.length} events, ${lineSteps.length} runs of the loop body`);
  console.log(`index + first stop: ${indexMs.toFixed(0)} ms`);
  console.log(
    `memory: rss ${mb(before.rss)} -> ${mb(after.rss)} (+${mb(after.rss - before.rss)} for the session's index), heap ${mb(before.heapUsed)} -> ${mb(after.heapUsed)} (+${mb(after.heapUsed - before.heapUsed)}); the parsed trace itself is in 'before'`,
  );
  console.log(`\nrequest latency over DAP (${POSITIONS} positions across the trace), target p99 < 10 ms:`);
  gcObserver.disconnect();
  let worst = 0;
  let worstNoGc = 0;
  let worstCpu = 0;
  const overlapsGc = (x: { start: number; ms: number }) => gcPauses.some((g) => g.end > x.start && g.start < x.start + x.ms && g.end - g.start > 1);
  for (const [name, xs] of Object.entries(samples)) {
    if (!xs.length) continue;
    const sorted = xs.map((x) => x.ms).sort((a, b) => a - b);
    const clean = xs
      .filter((x) => !overlapsGc(x))
      .map((x) => x.ms)
      .sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    worst = Math.max(worst, p99);
    if (clean.length) worstNoGc = Math.max(worstNoGc, percentile(clean, 99));
    const cpu = xs.map((x) => x.cpuMs).sort((a, b) => a - b);
    worstCpu = Math.max(worstCpu, percentile(cpu, 99));
    console.log(
      `  ${name.padEnd(17)} n=${String(xs.length).padStart(3)}  wall p50 ${percentile(sorted, 50).toFixed(2).padStart(6)} ms  p99 ${p99.toFixed(2).padStart(6)} ms  max ${sorted.at(-1)!.toFixed(2).padStart(6)} ms` +
        `  | cpu p50 ${percentile(cpu, 50).toFixed(2)} ms  p99 ${percentile(cpu, 99).toFixed(2)} ms  | wall p99 without GC-overlapped samples (${xs.length - clean.length} dropped): ${clean.length ? percentile(clean, 99).toFixed(2) : '-'} ms`,
    );
  }
  const pauses = gcPauses.map((g) => g.end - g.start).sort((a, b) => a - b);
  console.log(
    `GC during the measurements: ${pauses.length} pauses, total ${pauses.reduce((a, b) => a + b, 0).toFixed(0)} ms, longest ${(pauses.at(-1) ?? 0).toFixed(1)} ms; load average ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${os.cpus().length} cores`,
  );
  console.log(`\ncontinue with a never-true condition over the whole trace (${lineSteps.length} evaluations): ${wholeTraceMs.toFixed(0)} ms`);
  console.log(
    `worst wall p99: ${worst.toFixed(2)} ms — ${worst < 10 ? 'within' : 'OVER'} the 10 ms target (without GC-overlapped samples: ${worstNoGc.toFixed(2)} ms); worst cpu p99: ${worstCpu.toFixed(2)} ms`,
  );
  await dc.stop();
  server.close();
  if (restored) fs.rmSync(restored, { recursive: true, force: true });
  void session;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
