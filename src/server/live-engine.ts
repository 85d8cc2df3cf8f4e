// The real Engine: the tracer pool, the question generator, the model client
// (or the baseline), the judge and the sample store, assembled for the server.
// Every failure leaves here as an EngineError that says what to do next.
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { readStore, SampleStore } from '../engine/dataset/store';
import { exportRecords } from '../engine/dataset/exporters';
import { JudgeClient } from '../engine/judge/client';
import { BaselineProvider, ModelProvider, type Provider } from '../engine/model';
import { traceViaDebugpy } from '../engine/dap/debugpy-tracer';
import { resolvePython } from '../engine/python';
import { TracerError, TracerPool } from '../engine/trace/runner';
import type { Trace } from '../engine/trace/schema';
import { EngineError, type Engine, type ModelAccess, type TraceRequest } from './engine-port';
import type { Log } from '../engine/log';
import type { ExportParams, ExportResult, Health, Settings } from './protocol';
import { editorSample } from './samples';
import { predictStep, judgeStep, verifyCall, fromModelError, judgeFailure, shownPrediction, template, type Answering } from './asking';
import type { SampleInput } from '../engine/dataset/record';
import { askLive, liveSample } from '../engine/live/transition';
import { isModelError } from '../engine/model';
import { askTest, judgeTestAnswers } from './test-lens';

export interface LiveEngineOptions {
  log: Log;
  env?: NodeJS.ProcessEnv;
}

/** Tracer failures as the editor shows them. */
export function fromTracerError(e: unknown): EngineError {
  if (!(e instanceof TracerError)) return new EngineError('internal', e instanceof Error ? e.message : String(e));
  switch (e.code) {
    case 'python_not_found':
      return new EngineError('no_python', `No Python interpreter found. ${e.hint || 'Install Python 3.8+ or set execverify.pythonPath.'}`);
    case 'syntax_error':
      return new EngineError('syntax_error', e.message);
    case 'cancelled':
      return new EngineError('cancelled', 'cancelled');
    case 'bad_entry':
      return new EngineError('bad_params', e.message);
    default:
      return new EngineError('trace_failed', e.message);
  }
}

export class LiveEngine implements Engine, Answering {
  private pool: TracerPool | undefined;
  private poolPython: string | undefined;
  private provider: { key: string; provider: Provider } | undefined;

  constructor(private readonly options: LiveEngineOptions) {}

  /** One small pool for the editor (interactive use); rebuilt when the interpreter setting changes. */
  workers(settings: Settings): TracerPool {
    const env = this.options.env ?? process.env;
    const python = resolvePython(settings.pythonPath, env);
    if (!this.pool || this.poolPython !== python) {
      void this.pool?.close();
      this.pool = new TracerPool({ python, size: 2, env });
      this.poolPython = python;
    }
    return this.pool;
  }

  judge(settings: Settings): JudgeClient {
    return new JudgeClient(this.workers(settings));
  }

  /** The configured model, or the baseline when no endpoint is set (always labelled as such). */
  answerer(access: ModelAccess): { provider: Provider; note: string | undefined } {
    const s = access.settings;
    if (!s.baseUrl) {
      return {
        provider: new BaselineProvider(),
        note: 'No model endpoint is configured (execverify.baseUrl), so the trivial baseline answered. Set an endpoint to ask a model.',
      };
    }
    const key = JSON.stringify([s.baseUrl, s.model, s.apiMode, s.requestTimeoutMs, access.apiKey ?? '']);
    if (this.provider?.key !== key) {
      this.provider?.provider.close();
      try {
        const provider = new ModelProvider({
          baseURL: s.baseUrl,
          model: s.model || 'default',
          apiKey: access.apiKey,
          api: s.apiMode,
          timeoutMs: s.requestTimeoutMs,
          retries: 1,
          temperature: 0,
        });
        this.provider = { key, provider };
      } catch (e) {
        throw new EngineError(
          'endpoint_down',
          `The model endpoint settings are not valid: ${e instanceof Error ? e.message : String(e)}. Check execverify.baseUrl and execverify.model.`,
        );
      }
    }
    return { provider: this.provider.provider, note: undefined };
  }

  async trace(request: TraceRequest, signal: AbortSignal): Promise<Trace> {
    const s = request.settings;
    if (request.via === 'debugpy') return this.traceViaDebugpy(request, signal);
    const pool = request.python ? new TracerPool({ python: request.python, size: 1, env: this.options.env ?? process.env }) : this.workers(s);
    try {
      return await pool.trace(
        {
          path: request.file,
          source: request.source,
          entry: request.entry,
          cwd: request.cwd ?? path.dirname(request.file),
          limits: { steps: s.limits.steps, wallTimeMs: s.limits.wallTimeMs, memoryMb: s.limits.memoryMb, ...request.limits },
        },
        signal,
      );
    } catch (e) {
      throw fromTracerError(e);
    } finally {
      if (pool !== this.pool) void pool.close();
    }
  }

  /** A launch configuration's `via: "debugpy"`: the run recorded through debugpy over DAP, from the saved file. */
  private async traceViaDebugpy(request: TraceRequest, signal: AbortSignal): Promise<Trace> {
    if (request.entry.kind !== 'call') throw new EngineError('bad_params', '"via": "debugpy" records a call: set "entry" in the launch configuration.');
    if ((await fs.readFile(request.file, 'utf8')) !== request.source) {
      throw new EngineError('bad_params', `debugpy runs ${path.basename(request.file)} from disk: save it first.`);
    }
    const env = this.options.env ?? process.env;
    const s = request.settings;
    try {
      return await traceViaDebugpy(
        {
          path: request.file,
          expr: request.entry.expr,
          python: request.python ?? resolvePython(s.pythonPath, env),
          env,
          programEnv: request.env,
          limits: { steps: s.limits.steps, wallTimeMs: s.limits.wallTimeMs, ...request.limits },
        },
        signal,
      );
    } catch (e) {
      throw fromTracerError(e);
    }
  }

  predictStep: Engine['predictStep'] = (trace, step, access, signal) => predictStep(this, trace, step, access, signal);
  judgeStep: Engine['judgeStep'] = (trace, step, prediction, access, signal) => judgeStep(this, trace, step, prediction, signal, access.settings);
  verifyCall: Engine['verifyCall'] = (trace, access, signal) => verifyCall(this, trace, access, signal);
  askTest: Engine['askTest'] = (prompts, access, signal) => askTest(this, prompts, access, signal);
  judgeTest: Engine['judgeTest'] = (test, context, answers, run, access, signal) => judgeTestAnswers(this, test, context, answers, run, access, signal);

  askLive: Engine['askLive'] = async (stop, access, signal) => {
    const { provider, note } = this.answerer(access);
    try {
      const ask = await askLive(stop, template('next-step'), { provider, signal });
      const answered = ask.answered[0];
      if (!answered) throw new EngineError('internal', 'The next-step template asked nothing at this stop.');
      return { ask, result: shownPrediction(answered, provider, note) };
    } catch (e) {
      if (e instanceof EngineError || isModelError(e)) throw fromModelError(e, access.settings);
      // The ask road's own refusals (a stop at module level, a line it cannot ask about) say what to do.
      throw new EngineError('bad_params', e instanceof Error ? e.message : String(e));
    }
  };

  judgeLive: Engine['judgeLive'] = async (transition, stop, reason, access, signal) => {
    try {
      return await transition.stopped(stop, reason, this.judge(access.settings), signal);
    } catch (e) {
      throw judgeFailure(e, signal);
    }
  };

  async addLiveSample(input: Parameters<Engine['addLiveSample']>[0]): Promise<{ id: string; added: boolean }> {
    let sample: SampleInput;
    try {
      sample = liveSample(input.judged, { project: input.project, file: input.file });
    } catch (e) {
      throw new EngineError('bad_params', `Not added: ${e instanceof Error ? e.message : String(e)}.`);
    }
    return this.store(input.storeDir, sample);
  }

  async addSample(input: Parameters<Engine['addSample']>[0]): Promise<{ id: string; added: boolean }> {
    return this.store(input.storeDir, editorSample(input));
  }

  /** Adds one sample to the workspace's store (the same store for replay and live samples). */
  private store(storeDir: string, sample: SampleInput): { id: string; added: boolean } {
    let store: SampleStore;
    try {
      store = SampleStore.open(storeDir);
    } catch (e) {
      throw new EngineError('store_failed', `Cannot open the sample store ${storeDir}: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      const r = store.add(sample);
      if (r.added) return { id: r.record.id, added: true };
      if (r.reason === 'duplicate') return { id: r.id, added: false };
      if (r.reason === 'credential') throw new EngineError('bad_params', `Not added: ${r.message ?? 'the sample holds what looks like a credential'}.`);
      throw new EngineError('store_failed', `The sample was not valid: ${r.message ?? 'unknown reason'}`);
    } finally {
      store.close();
    }
  }

  async exportSamples(storeDir: string, params: ExportParams, _settings: Settings): Promise<ExportResult> {
    const { items } = readStore(storeDir);
    if (items.length === 0) throw new EngineError('store_failed', `The sample store ${storeDir} is empty: add samples first (“Add to dataset” in the panel).`);
    // A folder gets one file per split; a file name (with an extension) gets the file itself,
    // or one file per split named after it (`x.train.parquet`) when the store has several splits.
    const ext = path.extname(params.out);
    if (!ext) {
      const result = exportRecords(items, { format: params.format, out: params.out });
      return { out: params.out, records: result.rows, files: result.files.map((f) => f.path) };
    }
    await fs.mkdir(path.dirname(params.out), { recursive: true });
    const staging = await fs.mkdtemp(path.join(path.dirname(params.out), '.execverify-export-'));
    try {
      const result = exportRecords(items, { format: params.format, out: staging });
      const files: string[] = [];
      for (const f of result.files) {
        const target = result.files.length === 1 ? params.out : `${params.out.slice(0, -ext.length)}.${f.split}${path.extname(f.path)}`;
        await fs.rename(f.path, target);
        files.push(target);
      }
      return { out: params.out, records: result.rows, files };
    } finally {
      await fs.rm(staging, { recursive: true, force: true });
    }
  }

  async health(access: ModelAccess, signal: AbortSignal): Promise<Health> {
    const s = access.settings;
    if (!s.baseUrl) return { state: 'baseline', endpoint: '', model: '', message: 'Set execverify.baseUrl to ask a model.' };
    let provider: Provider;
    try {
      provider = this.answerer(access).provider;
    } catch (e) {
      return { state: 'down', endpoint: s.baseUrl, model: s.model, message: e instanceof Error ? e.message : String(e) };
    }
    if (!(provider instanceof ModelProvider)) return { state: 'baseline', endpoint: '', model: '', message: 'The baseline answers.' };
    const timeout = AbortSignal.timeout(5_000);
    try {
      const models = await provider.client.listModels(AbortSignal.any([signal, timeout]));
      const served = !s.model || models.includes(s.model);
      return {
        state: 'ok',
        endpoint: s.baseUrl,
        model: s.model,
        message: served
          ? `Serving ${models.length} model(s).`
          : `The server does not list “${s.model}” (it serves ${models.slice(0, 5).join(', ') || 'none'}).`,
      };
    } catch (e) {
      return { state: 'down', endpoint: s.baseUrl, model: s.model, message: e instanceof Error ? e.message : String(e) };
    }
  }

  async close(): Promise<void> {
    this.provider?.provider.close();
    await this.pool?.close();
  }
}

export function createLiveEngine(options: LiveEngineOptions): Engine {
  return new LiveEngine(options);
}
