// `execverify ask FILE --entry "f(1)"`: trace one call, ask a model (or the
// trivial baseline) the white-box questions about it, judge every answer
// against the recorded run and print question, answer, truth, verdict and reward.
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { UsageError, type CliIO, type Command } from '../command';
import { modelProviderFor } from '../provider';
import { askPrepared, prepareAsk } from '../../engine/ask';
import { JudgeClient } from '../../engine/judge/client';
import type { Reward } from '../../engine/judge/schema';
import { formatRunStats } from '../../engine/model/accounting';
import { BaselineProvider } from '../../engine/model/baseline';
import type { EndpointConfigInput } from '../../engine/model/config';
import { ModelError } from '../../engine/model/errors';
import type { Provider } from '../../engine/model/provider';
import { loadTemplates } from '../../engine/model/templates';
import type { Question } from '../../engine/questions/schema';
import { referenceLine } from '../../engine/questions/truth';
import { resolvePython } from '../../engine/python';
import { TracerPool } from '../../engine/trace/runner';

export const CONNECT_HINT = [
  'No model endpoint is configured, so the trivial baseline answers (next line = the line below, values unchanged, output None).',
  'To ask a real model, serve one behind an OpenAI-compatible API and point ExecVerify at it, for example:',
  '  ollama pull qwen2.5-coder:7b            # Ollama serves on 127.0.0.1:11434',
  '  export EXECVERIFY_BASE_URL=http://127.0.0.1:11434/v1 EXECVERIFY_MODEL=qwen2.5-coder:7b',
  'or',
  '  vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8000',
  '  export EXECVERIFY_BASE_URL=http://127.0.0.1:8000/v1 EXECVERIFY_MODEL=Qwen/Qwen2.5-Coder-7B-Instruct',
  'or pass --base-url URL --model NAME (a key, if the server needs one, goes in EXECVERIFY_API_KEY). See docs/model-endpoints.md.',
].join('\n');

function positiveInt(values: Record<string, unknown>, flag: string, fallback?: number): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${flag} needs a positive integer, got '${String(raw)}'`);
  return n;
}

function number(values: Record<string, unknown>, flag: string): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} needs a number, got '${String(raw)}'`);
  return n;
}

function describe(q: Question): string {
  switch (q.kind) {
    case 'output':
      return `${q.call} returns`;
    case 'input':
      return `an input for ${q.call} == ${q.outputRepr}`;
    case 'next_line':
      return `after line ${q.line} \`${q.lineText}\` (run ${q.k})`;
    case 'state':
      return `${q.var} after line ${q.line} \`${q.lineText}\` (run ${q.k})`;
    case 'state_any':
      return `${q.var} after line ${q.line} \`${q.lineText}\` (any run)`;
    case 'coverage':
      return `does line ${q.line} \`${q.lineText}\` run`;
  }
}

function cell(text: string, width: number): string {
  const one = text.replace(/\s+/g, ' ');
  return (one.length > width ? `${one.slice(0, width - 1)}…` : one).padEnd(width);
}

function printReward(io: CliIO, questions: readonly Question[], reward: Reward): void {
  const fmt = (x: number | null) => (x === null ? '-' : x.toFixed(2));
  io.stdout.write(
    `    R = ${reward.reward.toFixed(2)}  R_IO = ${fmt(reward.r_io)}  R_white = ${fmt(reward.r_white)}` +
      `${reward.gated ? `  (gated: ${reward.gated === 'io_wrong' ? 'wrong output' : 'answer count differs'})` : ''}` +
      `  answers ${reward.answers ?? '?'} / ${reward.questions ?? questions.length}\n`,
  );
  io.stdout.write(`    ${cell('#', 3)} ${cell('kind', 10)} ${cell('question', 46)} ${cell('answer', 22)} ${cell('truth', 22)} verdict\n`);
  questions.forEach((q, i) => {
    const b = reward.breakdown[i];
    const answer = b?.answer ?? '(none)';
    const verdict = b ? `${b.verdict.correct ? 'right' : 'WRONG'} (${b.verdict.reason})` : '(not judged)';
    io.stdout.write(
      `    ${cell(String(i + 1), 3)} ${cell(q.kind, 10)} ${cell(describe(q), 46)} ${cell(answer, 22)} ${cell(referenceLine(q), 22)} ${verdict}\n`,
    );
  });
}

export const askCommand: Command = {
  name: 'ask',
  summary: 'Trace a call, ask a model (or the trivial baseline) what happens, judge each answer against the real run, print the rewards.',
  usage:
    'execverify ask FILE --entry "f([1, 2])" [--template execverify|reval|cruxeval-output|cruxeval-input] [--samples K] ' +
    '[--base-url URL --model NAME] [--api chat|completions] [--temperature T] [--max-tokens N] [--seed N] ' +
    '[--timeout-ms MS] [--no-cache] [--cache-dir DIR] [--show-prompt] [--show-response] [--question-seed N (default: from the code and the entry)] [--python PATH]',
  options: {
    entry: { type: 'string', short: 'e' },
    template: { type: 'string', short: 't' },
    samples: { type: 'string', short: 'k' },
    'base-url': { type: 'string' },
    model: { type: 'string', short: 'm' },
    api: { type: 'string' },
    temperature: { type: 'string' },
    'max-tokens': { type: 'string' },
    seed: { type: 'string' },
    'timeout-ms': { type: 'string' },
    'no-cache': { type: 'boolean' },
    'cache-dir': { type: 'string' },
    'show-prompt': { type: 'boolean' },
    'show-response': { type: 'boolean' },
    'question-seed': { type: 'string' },
    python: { type: 'string' },
  },
  async run(values, positionals, io) {
    if (positionals.length !== 1) throw new UsageError(positionals.length ? `one FILE only (got ${positionals.join(', ')})` : 'missing FILE');
    if (typeof values.entry !== 'string' || !values.entry.trim()) throw new UsageError('missing --entry "f(...)": the call to trace and ask about');
    const file = path.resolve(io.cwd, positionals[0]!);
    if (!existsSync(file) || !statSync(file).isFile()) throw new UsageError(`no such file: ${positionals[0]}`);
    const samples = positiveInt(values, 'samples', 1)!;
    if (values.api !== undefined && values.api !== 'chat' && values.api !== 'completions')
      throw new UsageError(`--api must be chat or completions, not '${String(values.api)}'`);

    const loaded = await loadTemplates(undefined);
    if (!loaded.ok) throw new Error(loaded.error);
    const templateName = typeof values.template === 'string' ? values.template : 'execverify';
    const template = loaded.templates.get(templateName);
    const askable = [...loaded.templates.values()].filter((t) => t.format !== 'next_step_json').map((t) => t.name);
    if (!template || template.format === 'next_step_json') {
      throw new UsageError(
        `unknown template '${templateName}' (choose one of: ${askable.join(', ')}; next-step prompts need a stopped debugger, use the editor)`,
      );
    }

    // The endpoint: flags, then environment variables; none → the baseline.
    const overrides: Partial<EndpointConfigInput> = {};
    if (typeof values['base-url'] === 'string') overrides.baseURL = values['base-url'];
    if (typeof values.model === 'string') overrides.model = values.model;
    if (values.api !== undefined) overrides.api = values.api as 'chat' | 'completions';
    const temperature = number(values, 'temperature');
    if (temperature !== undefined) overrides.temperature = temperature;
    const maxTokens = positiveInt(values, 'max-tokens');
    if (maxTokens !== undefined) overrides.maxTokens = maxTokens;
    const seed = number(values, 'seed');
    if (seed !== undefined) overrides.seed = seed;
    const timeoutMs = positiveInt(values, 'timeout-ms');
    if (timeoutMs !== undefined) overrides.timeoutMs = timeoutMs;
    let provider: Provider | undefined = modelProviderFor(io, values, overrides);
    if (!provider) {
      io.stderr.write(`${CONNECT_HINT}\n\n`);
      provider = new BaselineProvider();
    }

    const pool = new TracerPool({ python: resolvePython(typeof values.python === 'string' ? values.python : undefined, io.env), size: 1, env: io.env });
    try {
      const trace = await pool.trace({ path: file, entry: { kind: 'call', expr: values.entry }, cwd: path.dirname(file) }, io.signal);
      // The questions `ask` asks are the ones the editor and a harvest ask about the same call (one seed policy).
      const questionSeed = positiveInt(values, 'question-seed');
      const prepared = prepareAsk(trace, template, { kind: 'call' }, questionSeed !== undefined ? { seed: questionSeed } : {});
      const prompts = prepared.prompts;
      const label = provider.info.kind === 'baseline' ? 'baseline (trivial answers, not a model)' : `model ${provider.info.label}`;
      io.stdout.write(`provider: ${label}\n`);
      io.stdout.write(`program:  ${positionals[0]}  entry: ${values.entry}  outcome: ${trace.outcome.kind}\n`);
      io.stdout.write(
        `template: ${template.name}@${template.version}  questions: ${prompts.reduce((n, p) => n + p.questions.length, 0)}  prompts: ${prompts.length}  samples: ${samples}\n`,
      );
      if (prompts.length === 0) {
        io.stdout.write('nothing to ask: the run gave no questions this template can ask (did the call run any traced lines?)\n');
        return 0;
      }

      const rewards: number[][] = [];
      let right = 0;
      let judged = 0;
      // All prompts go out at once (the client's concurrency limit applies); results print in order.
      const result = await askPrepared(prepared, { provider, judge: new JudgeClient(pool), samples, signal: io.signal });
      for (const [p, outcome] of result.prompts.entries()) {
        const rendered = outcome.prompt;
        io.stdout.write(`\nprompt ${p + 1}/${prompts.length} (${rendered.questions.length} question${rendered.questions.length === 1 ? '' : 's'})\n`);
        if (values['show-prompt']) {
          const text = rendered.prompt.kind === 'chat' ? rendered.prompt.messages.map((m) => `[${m.role}]\n${m.content}`).join('\n') : rendered.prompt.text;
          io.stdout.write(`${text.replace(/^/gm, '  | ')}\n`);
        }
        if (!outcome.ok) {
          const err: unknown = outcome.error;
          if (err instanceof ModelError) {
            io.stderr.write(`execverify ask: ${provider.info.label}: ${err.message}\n`);
            return 1;
          }
          throw err;
        }
        const perSample: number[] = [];
        for (const [s, sample] of outcome.samples.entries()) {
          io.stdout.write(
            `  sample ${s + 1}/${outcome.samples.length}${outcome.answered.reply.cached ? ' (cached)' : ''}${sample.finishReason === 'length' ? ' (cut at max tokens)' : ''}\n`,
          );
          if (values['show-response']) io.stdout.write(`${sample.text.replace(/^/gm, '  > ')}\n`);
          const reward = sample.reward!;
          perSample.push(reward.reward);
          judged += reward.breakdown.length;
          right += reward.breakdown.filter((b) => b.verdict.correct).length;
          printReward(io, rendered.questions, reward);
        }
        rewards.push(perSample);
      }

      const all = rewards.flat();
      const mean = all.reduce((a, b) => a + b, 0) / Math.max(1, all.length);
      io.stdout.write(
        `\nsummary: ${right}/${judged} answers right; mean R ${mean.toFixed(2)} (max 2) over ${all.length} response${all.length === 1 ? '' : 's'} from ${provider.info.kind === 'baseline' ? 'the baseline' : provider.info.label}\n`,
      );
      if (provider.info.kind === 'model') io.stdout.write(`model usage: ${formatRunStats(provider.stats())}\n`);
      return 0;
    } finally {
      provider.close();
      await pool.close();
    }
  },
};
