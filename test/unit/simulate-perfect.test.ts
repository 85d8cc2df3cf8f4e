// A perfect simulator closes the gap: on the whole shipped problem set, a model
// (the test server) that answers every public test with what the run really
// returned or printed — read from a first run's report — must be judged right
// on every finished run, accept exactly the candidates that really pass, and so
// score pass@1 simulated = oracle (gap 0), with no correct candidate rejected
// and no wrong one accepted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseProblems } from '../../src/engine/simulate/problem';
import { SimulateReportSchema, type SimulateReport } from '../../src/engine/simulate/report';
import { startOpenAIServer, type OpenAIServer } from '../support/openai-server';
import { noModelEnv, runCli } from '../support/cli';

const SHIPPED = join(__dirname, '../../examples/problems/problems.jsonl');
const dir = mkdtempSync(join(tmpdir(), 'ev-simperfect-'));
const problems = parseProblems(readFileSync(SHIPPED, 'utf8'));

const cli = (...argv: string[]) => runCli(argv, { cwd: dir, env: noModelEnv() });
const report = (out: string): SimulateReport => SimulateReportSchema.parse(JSON.parse(readFileSync(join(dir, out, 'report.json'), 'utf8')));

/** What the perfect model says for (code, call): the real outcome, from the baseline run's report. */
const truthOf = new Map<string, string>();
let server: OpenAIServer;

before(async () => {
  const base = await cli('simulate', '--problems', SHIPPED, '--out', 'base', '--quiet');
  assert.equal(base.code, 0, base.err);
  const first = report('base');
  for (const p of problems) {
    const r = first.problems.find((x) => x.id === p.id)!;
    for (const c of p.candidates) {
      const runs = r.candidates.find((x) => x.id === c.id)!;
      p.public.forEach((t, i) => {
        const run = runs.tests.find((x) => x.split === 'public' && x.test === i)!;
        const call = 'call' in t ? t.call : `output(${JSON.stringify(t.stdin)})`;
        // A run that did not finish has no output: any answer but the expected one is "it fails".
        const finished = runs.predictions[i]!.prediction_right !== null;
        const said = !finished ? JSON.stringify('the run does not finish') : p.kind === 'script' ? JSON.stringify(run.actual) : run.actual;
        truthOf.set(`${c.code.replace(/\n$/, '')}\u0000${call}`, said);
      });
    }
  }
  server = await startOpenAIServer({
    script: (req) => {
      const prompt = ((req.body?.messages ?? []) as { content: string }[]).at(-1)!.content;
      const code = /\[PYTHON\]\n([\s\S]*?)\n\[\/PYTHON\]/.exec(prompt)![1]!;
      const call = /assert (.*) == \?\?/.exec(prompt)![1]!;
      const said = truthOf.get(`${code}\u0000${call}`);
      if (said === undefined) throw new Error(`unknown prompt for ${call}`);
      return { text: `[ANSWER]\nassert ${call} == ${said}\n[/ANSWER]` };
    },
  });
});
after(async () => server?.close());

test('a model that predicts every run right: simulated pass@1 equals the oracle, nothing rejected or accepted wrongly', async () => {
  const r = await cli('simulate', '--problems', SHIPPED, '--out', 'perfect', '--base-url', server.url, '--model', 'perfect', '--no-cache', '--quiet');
  assert.equal(r.code, 0, r.err);
  const rep = report('perfect');
  const s = rep.summary;
  assert.equal(s.prediction_accuracy, 1);
  assert.equal(s.model_errors, 0);
  for (const p of rep.problems) for (const c of p.candidates) assert.equal(c.simulated_public, c.real_public, `${p.id}/${c.id}`);
  assert.equal(s.pass_at_1.simulated, s.pass_at_1.oracle);
  assert.equal(s.gap, 0);
  assert.equal(s.correct_rejected, 0);
  assert.equal(s.wrong_accepted, 0);
  assert.ok(s.pass_at_1.simulated > s.pass_at_1.random);
  assert.match(r.out, /pass@1 {2}random 50\.0% {2}simulated 71\.0% {2}oracle 71\.0% {2}gap 0\.0 points/);
});
