// Synthesis end to end: the OpenAI-compatible test server scripted to return
// programs (good, broken, endless, hostile, nondeterministic, duplicated,
// non-literal), real HTTP, the real tracer under the OS sandbox, the real
// judge; the batch round trip gives the online dataset; the difficulty filter
// keeps the band; a killed run resumes to the same dataset.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { readStore } from '../../src/engine/dataset/store';
import { harvestAsking } from '../../src/engine/harvest/questioner';
import { ModelProvider } from '../../src/engine/model';
import { ModelClient } from '../../src/engine/model/client';
import { BUILTIN_TEMPLATES } from '../../src/engine/model/templates';
import { pythonTracerDir, resolvePython } from '../../src/engine/python';
import { TracerPool } from '../../src/engine/trace/runner';
import { importSynthesisResults, specsOfRequests, writeSynthesisRequests } from '../../src/engine/synthesize/batch';
import { loadConstraints, sampleSpecs } from '../../src/engine/synthesize/constraints';
import { readAnswers, synthesize, workFiles, type SynthDrop } from '../../src/engine/synthesize/pipeline';
import { buildSynthesisReport } from '../../src/engine/synthesize/report';
import { modelSource } from '../../src/engine/synthesize/source';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { GOOD, programAnswers, specIndex, type ScriptedProgram } from '../fixtures/synthesize/programs';

const template = BUILTIN_TEMPLATES.find((t) => t.name === 'execverify')!;
const constraints = loadConstraints();
const python = resolvePython(undefined, process.env);
const tracerDir = pythonTracerDir();
const evil = path.join(os.tmpdir(), `execverify-synth-evil-${process.pid}`);
const forked = path.join(os.tmpdir(), `execverify-synth-forked-${process.pid}`);

/** A step limit the endless loop reaches in a fraction of a second (the wall-time limit stays as it is). */
const LIMITS = { steps: 200_000 };

let server: OpenAIServer;
let judgePool: TracerPool;
let root: string;
// A listener on this machine the hostile program tries to reach: no connection may arrive.
let listener: net.Server;
let connections = 0;
let port = 0;
let PROGRAMS: ScriptedProgram[] = [];
/** Spec i's answer. */
const programText = (i: number) => PROGRAMS[i]?.text ?? 'no program';
before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'synth-test-'));
  listener = net.createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  port = (listener.address() as net.AddressInfo).port;
  PROGRAMS = programAnswers({ evil, forked, port });
  judgePool = new TracerPool({ size: 2 });
  server = await startOpenAIServer({
    script: (req) => {
      const i = specIndex(req.body);
      if (i !== undefined) return { text: programText(i) };
      return { text: 'wrong' };
    },
  });
});
after(async () => {
  await server.close();
  await judgePool.close();
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(evil, { force: true });
  fs.rmSync(forked, { force: true });
  await new Promise((resolve) => listener.close(resolve));
});

const specs = sampleSpecs(constraints, { count: programAnswers({ evil, forked, port: 0 }).length, seed: 0 });

async function runOnline(out: string, extra: { limit?: number; mutate?: number } = {}) {
  const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
  try {
    return await synthesize(
      { out, specs, constraints, concurrency: 2, limits: LIMITS, ...extra },
      { python, tracerDir, env: process.env, source: modelSource(client), questioner: harvestAsking(template).questioner },
    );
  } finally {
    client.close();
  }
}

/** The online run every test compares with, made once. */
let online: ReturnType<typeof runOnline> | undefined;
const onlineRun = () => (online ??= runOnline(path.join(root, 'online')));

function drops(out: string): SynthDrop[] {
  return fs
    .readFileSync(workFiles(out).drops, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as SynthDrop);
}

/** A record without what differs between two runs of the same call (the trace's timing is in its digest). */
function comparable(out: string) {
  return readStore(out)
    .items.map((r) => ({ ...r, trace: { ...r.trace, digest: '' } }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}

test('online synthesis keeps the good programs and drops every other with its reason; the machine is unchanged', async () => {
  const out = path.join(root, 'online');
  const result = await onlineRun();
  assert.equal(result.stoppedEarly, false);
  const kept = readStore(out).items;
  assert.deepEqual(kept.map((r) => r.entry).sort(), ["words(' A,b,,C ')", 'odd_sum([1, 2, 3])', 'odd_sum([])'].sort());
  for (const r of kept) {
    assert.equal(r.provenance.synthesis?.source, 'synthesized');
    assert.equal(r.provenance.project, 'synthesized');
    const spec = specs.find((s) => s.id === r.provenance.synthesis!.spec)!;
    assert.deepEqual(r.provenance.synthesis?.constraints, spec.constraints, 'each sample records its constraints');
    assert.equal(r.provenance.synthesis?.level, spec.level);
    assert.ok(r.questions.length > 0);
    assert.equal(r.trace.isolation !== undefined, true);
  }
  if (process.env.SYNTH_DEBUG) console.log(drops(out));
  const bySpec = new Map<number, SynthDrop[]>();
  for (const d of drops(out)) {
    const i = Number(d.spec.split('-')[1]);
    bySpec.set(i, [...(bySpec.get(i) ?? []), d]);
  }
  PROGRAMS.forEach((p, i) => {
    if (p.expect === 'kept') return assert.equal(bySpec.get(i), undefined, `spec ${i} is kept whole`);
    const [stage, reasons] = Object.entries(p.expect)[0]!;
    const got = bySpec.get(i) ?? [];
    assert.equal(got.length, 1, `spec ${i}: one drop (${JSON.stringify(got)})`);
    assert.equal(got[0]!.stage, stage, `spec ${i}: ${JSON.stringify(got[0])}`);
    assert.match(got[0]!.reason, new RegExp(`^(?:${reasons})$`), `spec ${i}: ${JSON.stringify(got[0])}`);
  });
  assert.equal(fs.existsSync(evil), false, 'the hostile program wrote nothing outside its sandbox');
  assert.equal(fs.existsSync(forked), false, 'no forked child ran');
  assert.equal(connections, 0, 'no connection reached the listener');
  const report = buildSynthesisReport({ out, constraints: 'x', specs: specs.length, counters: result.counters, totalSeconds: 1, stoppedEarly: false });
  assert.equal(report.kept, 3);
  const stage = (name: string, at = 0) => report.stages.filter((x) => x.stage === name)[at]!;
  assert.deepEqual(stage('parse'), { stage: 'parse', in: PROGRAMS.length, dropped: 2, out: PROGRAMS.length - 2 });
  assert.equal(stage('analyse').dropped, 2, 'syntax, forbidden_import');
  assert.equal(stage('store').out, 3, 'the calls funnel ends with the samples kept');
  assert.equal(stage('analyse').out, 14, 'readable programs');
  assert.equal(stage('calls').in, 15, 'their calls (the first program has two)');
  assert.equal(report.drops.dedup?.duplicate, 1);
  assert.equal(report.drops.dedup?.near_duplicate, 1);
  assert.equal(report.model.synthesis.requests, PROGRAMS.length);
  assert.ok(report.model.synthesis.completionTokens > 0);
  assert.equal(
    Object.values(report.levels).reduce((a, b) => a + b, 0),
    3,
  );
});

test('the batch round trip (requests → a results file → import) gives the online dataset', async () => {
  await onlineRun();
  const requests = path.join(root, 'requests.jsonl');
  assert.equal(await writeSynthesisRequests(requests, { model: 'm' }, specs, constraints), PROGRAMS.length);
  const lines = fs
    .readFileSync(requests, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { custom_id: string; body: Record<string, unknown> });
  // The results file as a batch runner writes it, in another order, with one line per request.
  const results = lines
    .reverse()
    .map((l) => ({
      id: `batch_req_${l.custom_id}`,
      custom_id: l.custom_id,
      response: {
        status_code: 200,
        body: {
          id: 'x',
          object: 'chat.completion',
          model: 'm',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: programText(specIndex(l.body)!) } }],
          usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
        },
      },
      error: null,
    }))
    .map((l) => JSON.stringify(l))
    .join('\n');
  const offline = path.join(root, 'offline');
  const fromRequests = specsOfRequests(fs.readFileSync(requests, 'utf8'), constraints, { model: 'm' }).specs;
  assert.deepEqual(fromRequests, specs, 'the request file gives the specs back');
  fs.mkdirSync(offline, { recursive: true });
  const summary = importSynthesisResults(
    offline,
    results,
    fromRequests.map((x) => x.id),
  );
  assert.equal(summary.imported, PROGRAMS.length);
  assert.deepEqual(summary.errors, []);
  await synthesize(
    { out: offline, specs: fromRequests, constraints, concurrency: 2, limits: LIMITS },
    { python, tracerDir, env: process.env, questioner: harvestAsking(template).questioner },
  );
  assert.deepEqual(comparable(offline), comparable(path.join(root, 'online')));
  const sortDrops = (d: SynthDrop[]) => d.map((x) => `${x.candidate}:${x.reason}`).sort();
  assert.deepEqual(sortDrops(drops(offline)), sortDrops(drops(path.join(root, 'online'))));
  assert.equal(
    importSynthesisResults(
      offline,
      results,
      fromRequests.map((x) => x.id),
    ).imported,
    0,
    'importing again adds nothing',
  );
  // The same through the CLI (default limits), to the same samples.
  fs.writeFileSync(path.join(root, 'results.jsonl'), results);
  const { main } = await import('../../src/cli/main');
  let said = '';
  const sink = { write: (t: string) => ((said += t), true) } as unknown as NodeJS.WritableStream;
  const io = { stdout: sink, stderr: sink, env: process.env, cwd: root, signal: new AbortController().signal };
  const code = await main(
    ['synthesize', 'import', 'results.jsonl', '--requests', 'requests.jsonl', '--out', 'cli', '--model', 'm', '--k', '0', '--quiet', '--json'],
    io,
  );
  assert.equal(code, 0, said);
  assert.deepEqual(comparable(path.join(root, 'cli')), comparable(path.join(root, 'online')));
  assert.ok(fs.existsSync(path.join(root, 'cli', 'report.md')));
});

test('a run stopped by --limit resumes without asking again, to the same dataset', async () => {
  await onlineRun();
  const out = path.join(root, 'resumed');
  const first = await runOnline(out, { limit: 1 });
  assert.equal(first.stoppedEarly, true);
  assert.equal(readStore(out).items.length, 1);
  const asked = readAnswers(workFiles(out).answers).size;
  const requestsBefore = server.stats.requests;
  // A torn last line, as a kill in the middle of a write leaves it.
  fs.appendFileSync(path.join(out, 'samples.jsonl'), '{"schema":"execverify.sample/1","id":"ab');
  await runOnline(out);
  assert.equal(server.stats.requests - requestsBefore, PROGRAMS.length - asked, 'only the specs never asked are asked');
  assert.deepEqual(comparable(out), comparable(path.join(root, 'online')));
  const ids = readStore(out).items.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length);
});

test('the difficulty filter records k answers per sample and keeps the band', async () => {
  // The reference model is right on odd_sum's prompts and wrong on the others: a pass rate of 1 and of 0.
  const prompts = new Map<string, string>();
  for (const [code, call] of [
    [GOOD, 'odd_sum([1, 2, 3])'],
    [GOOD, 'odd_sum([])'],
  ] as const) {
    const trace = await judgePool.trace({ path: 'p.py', source: code, entry: { kind: 'call', expr: call } });
    const asked = harvestAsking(template).questioner(trace, { code, entry: call, function: 'odd_sum' });
    assert.ok(!('skip' in asked));
    prompts.set(asked.prompt.at(-1)!.content, asked.reference!);
  }
  const scoring = await startOpenAIServer({
    script: (req) => {
      const content = ((req.body?.messages ?? []) as { content: string }[]).at(-1)?.content ?? '';
      const ref = prompts.get(content);
      const n = Number(req.body?.n ?? 1);
      // 3 of 10 right: inside the paper's band (≤ 3 of 10).
      return { text: Array.from({ length: n }, (_, i) => (ref && i < 3 ? ref : 'wrong')) };
    },
  });
  const provider = new ModelProvider({ baseURL: scoring.url, model: 'ref', retries: 0 });
  const out = path.join(root, 'difficulty');
  try {
    const { questioner, scorer } = harvestAsking(template, { provider, workers: judgePool, k: 10 });
    const client = new ModelClient({ baseURL: server.url, model: 'm', retries: 0 });
    await synthesize(
      { out, specs: specs.slice(0, 2), constraints, concurrency: 2, passBand: { min: 0.1, max: 0.3 } },
      { python, tracerDir, env: process.env, source: modelSource(client), questioner, scorer },
    );
    client.close();
  } finally {
    provider.close();
    await scoring.close();
  }
  const kept = readStore(out).items;
  assert.deepEqual(kept.map((r) => r.entry).sort(), ['odd_sum([1, 2, 3])', 'odd_sum([])']);
  for (const r of kept) {
    assert.equal(r.difficulty.k, 10);
    assert.equal(r.difficulty.passRate, 0.3);
    assert.equal(r.answers.length, 10);
  }
  const dropped = drops(out).filter((d) => d.stage === 'difficulty');
  assert.equal(dropped.length, 1, 'words(...) got 0 of 10 right: below the band');
  assert.equal(dropped[0]!.reason, 'outside_pass_band');
});

test('export selects by curriculum level and pass band; synthesize prompts writes the Batch file from the CLI', async () => {
  await onlineRun();
  const { main } = await import('../../src/cli/main');
  const io = (lines: string[]) => ({
    stdout: { write: (t: string) => (lines.push(t), true) } as unknown as NodeJS.WritableStream,
    stderr: { write: (t: string) => (lines.push(t), true) } as unknown as NodeJS.WritableStream,
    env: process.env,
    cwd: root,
    signal: new AbortController().signal,
  });
  const levels = readStore(path.join(root, 'online')).items.map((r) => r.provenance.synthesis!.level!);
  const one = levels[0]!;
  const out: string[] = [];
  assert.equal(await main(['export', 'online', '--format', 'openrlhf', '--out', 'exp', '--levels', String(one)], io(out)), 0);
  const rows = fs
    .readdirSync(path.join(root, 'exp'))
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) =>
      fs
        .readFileSync(path.join(root, 'exp', f), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean),
    );
  assert.equal(rows.length, levels.filter((l) => l === one).length);
  const unscored: string[] = [];
  assert.equal(
    await main(['export', 'online', '--format', 'openrlhf', '--out', 'exp2', '--pass-band', 'paper'], io(unscored)),
    1,
    'nothing scored: nothing in the band',
  );
  assert.match(unscored.join(''), /left out 3 samples: not scored/);
  const bad: string[] = [];
  assert.equal(await main(['export', 'online', '--format', 'openrlhf', '--out', 'exp3', '--pass-band', 'half'], io(bad)), 2);
  assert.match(bad.join(''), /paper/);
  const p: string[] = [];
  assert.equal(await main(['synthesize', 'prompts', '--count', '3', '--seed', '5', '--out', 'req.jsonl', '--model', 'm'], io(p)), 0);
  const written = fs
    .readFileSync(path.join(root, 'req.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { custom_id: string; url: string });
  assert.deepEqual(
    written.map((l) => l.custom_id),
    ['s5-0', 's5-1', 's5-2'],
  );
  assert.equal(written[0]!.url, '/v1/chat/completions');
});

test('a synthesis killed with SIGKILL resumes to the same dataset, with no duplicate and no corrupt record', async () => {
  await onlineRun();
  const out = path.join(root, 'killed');
  const REPO = path.resolve(__dirname, '..', '..');
  const CLI = path.join(REPO, 'src', 'cli', 'main.ts');
  const args = ['synthesize', '--count', String(specs.length), '--out', out, '--base-url', server.url, '--model', 'm', '--k', '0', '--jobs', '1', '--quiet'];
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], { cwd: REPO, stdio: 'ignore', detached: true });
  const answers = workFiles(out).answers;
  // Kill the whole group (CLI + tracer workers) in the middle of the run.
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      const lines = fs.existsSync(answers) ? fs.readFileSync(answers, 'utf8').split('\n').length - 1 : 0;
      if (lines >= 6) {
        clearInterval(timer);
        process.kill(-child.pid!, 'SIGKILL');
        resolve();
      }
    }, 10);
    child.once('exit', () => {
      clearInterval(timer);
      reject(new Error('the run finished before it could be killed'));
    });
  });
  await new Promise((r) => child.once('exit', r));
  assert.ok(readAnswers(answers).size < specs.length, 'killed before the end');
  const { main } = await import('../../src/cli/main');
  let said = '';
  const sink = { write: (t: string) => ((said += t), true) } as unknown as NodeJS.WritableStream;
  const code = await main(args, { stdout: sink, stderr: sink, env: process.env, cwd: root, signal: new AbortController().signal });
  assert.equal(code, 0, said);
  const lines = fs.readFileSync(path.join(out, 'samples.jsonl'), 'utf8').trimEnd().split('\n');
  const ids = lines.map((l) => (JSON.parse(l) as { id: string }).id);
  assert.equal(new Set(ids).size, ids.length, 'no duplicate, every line a record');
  assert.deepEqual(comparable(out), comparable(path.join(root, 'online')), 'the uninterrupted run’s samples');
  const reasons = (d: SynthDrop[]) => d.map((x) => `${x.candidate}:${x.reason}`).sort();
  assert.deepEqual(reasons(drops(out)), reasons(drops(path.join(root, 'online'))), 'the same drops, each once');
});
