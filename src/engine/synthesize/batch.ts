// The offline road: synthesis requests as an OpenAI Batch JSONL file (the
// model layer's batch writer: vLLM's run_batch and hosted batch APIs read
// it), and a result file imported back into work/answers.jsonl, after which
// the pipeline runs exactly as online.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { batchRequestLines, BatchRequestLineSchema, parseBatchResults, writeBatchFile, type BatchLineError, type BatchSettings } from '../model/batch';
import { chatPrompt } from '../model/prompt';
import { normaliseCode, type SampleRecord } from '../dataset/record';
import { JsonlAppender, readStore, repairTail } from '../dataset/store';
import { parseProgramAnswer } from './answer';
import { parseSpecId, sampleSpec, type Constraints, type Spec } from './constraints';
import { readAnswers, workFiles, type AnswerRecord } from './pipeline';
import { inputsId, inputsPrompt, SYNTHESIS_PROMPT_VERSION, synthesisPrompt, type ProgramOf } from './prompt';

export function synthesisBatchItems(specs: readonly Spec[], constraints: Constraints) {
  return specs.map((spec) => ({
    customId: spec.id,
    request: { prompt: chatPrompt(synthesisPrompt(spec, constraints)), samples: 1, templateVersion: SYNTHESIS_PROMPT_VERSION },
  }));
}

/** Writes the request file (temp + rename); returns the number of requests. */
export async function writeSynthesisRequests(file: string, settings: BatchSettings, specs: readonly Spec[], constraints: Constraints): Promise<number> {
  return writeBatchFile(file, { ...settings, api: 'chat' }, synthesisBatchItems(specs, constraints));
}

export class SynthesisImportError extends Error {
  override name = 'SynthesisImportError';
}

/**
 * The second-round requests (`synthesize prompts --inputs N --from DIR`): for
 * each program of DIR that yielded a sample, `count` more calls of it.
 */
export function inputsBatchItems(out: string, count: number) {
  const answers = readAnswers(workFiles(out).answers);
  const stored = fs.existsSync(out) ? readStore(out).items : [];
  const items = [];
  for (const record of answers.values()) {
    if (!parseSpecId(record.id) || record.error) continue;
    for (const [answer, text] of record.texts.entries()) {
      const program = programOf(record.id, answer, text, stored);
      if (program)
        items.push({
          customId: inputsId(record.id, answer),
          request: { prompt: chatPrompt(inputsPrompt(record.id, answer, program, count)), samples: 1, templateVersion: SYNTHESIS_PROMPT_VERSION },
        });
    }
  }
  return items;
}

/** Answer `answer` of a spec as a program with a stored sample (its entry function from the sample), or undefined. */
function programOf(spec: string, answer: number, text: string, stored: readonly SampleRecord[]): ProgramOf | undefined {
  const parsed = parseProgramAnswer(text);
  if (!parsed.ok) return undefined;
  const code = normaliseCode(parsed.code);
  const kept = stored.find((r) => r.provenance.synthesis?.spec === spec && normaliseCode(r.code) === code);
  return kept ? { code: parsed.code, function: kept.provenance.function, calls: parsed.calls } : undefined;
}

const INPUTS_ID = /^(s\d+-\d+)\.(\d+)\.inputs$/;

export interface RequestsRead {
  /** The specs the file asks about, in first-seen order. */
  specs: Spec[];
  /** Every custom_id of the file (first-round and second-round). */
  ids: string[];
}

/**
 * The specs of a request file, made again from their custom_ids with the
 * given constraints (and levels) — and, for second-round requests, from the
 * programs stored in `out` with `inputs` calls asked; a request whose prompt
 * is not the one they make was written otherwise, and is refused with what to pass.
 */
export function specsOfRequests(
  text: string,
  constraints: Constraints,
  settings: BatchSettings,
  options: { levels?: readonly number[]; out?: string; inputs?: number } = {},
): RequestsRead {
  const specs = new Map<string, Spec>();
  const ids: string[] = [];
  let stored: SampleRecord[] | undefined;
  let answers: ReturnType<typeof readAnswers> | undefined;
  for (const [i, raw] of text.split('\n').entries()) {
    if (!raw.trim()) continue;
    const line = BatchRequestLineSchema.safeParse(
      (() => {
        try {
          return JSON.parse(raw);
        } catch {
          return undefined;
        }
      })(),
    );
    if (!line.success) throw new SynthesisImportError(`requests line ${i + 1} is not a Batch request line`);
    const customId = line.data.custom_id;
    const round2 = INPUTS_ID.exec(customId);
    const id = parseSpecId(round2 ? round2[1]! : customId);
    if (!id) throw new SynthesisImportError(`requests line ${i + 1}: custom_id '${customId}' was not written by \`execverify synthesize prompts\``);
    const spec = sampleSpec(constraints, id.seed, id.index, options.levels);
    let item;
    if (round2) {
      if (!options.out || !options.inputs)
        throw new SynthesisImportError(
          `requests line ${i + 1} (${customId}) is a second-round request: pass --inputs N (as written) and the --out DIR it was written from`,
        );
      stored ??= readStore(options.out).items;
      answers ??= readAnswers(workFiles(options.out).answers);
      const answer = Number(round2[2]);
      const text = answers.get(spec.id)?.texts[answer];
      const program = text === undefined ? undefined : programOf(spec.id, answer, text, stored);
      if (!program)
        throw new SynthesisImportError(
          `requests line ${i + 1} (${customId}): ${options.out} holds no kept program for it: import into the --out DIR the requests were written from`,
        );
      item = {
        customId,
        request: { prompt: chatPrompt(inputsPrompt(spec.id, answer, program, options.inputs)), samples: 1, templateVersion: SYNTHESIS_PROMPT_VERSION },
      };
    } else {
      item = synthesisBatchItems([spec], constraints)[0]!;
    }
    const [expected] = batchRequestLines({ ...settings, api: 'chat' }, [item]);
    if (JSON.stringify(expected!.body.messages) !== JSON.stringify(line.data.body.messages)) {
      throw new SynthesisImportError(
        `requests line ${i + 1} (${customId}) holds another prompt than these settings make: pass the --constraints, --levels (and --inputs) the requests were written with`,
      );
    }
    if (!specs.has(spec.id)) specs.set(spec.id, spec);
    ids.push(customId);
  }
  return { specs: [...specs.values()], ids };
}

export interface ImportSummary {
  specs: Spec[];
  imported: number;
  errors: BatchLineError[];
  missing: string[];
}

/**
 * Reads a Batch result file for the specs of a request file and appends each
 * spec's answer (or its error) to DIR/work/answers.jsonl; answers already
 * there are kept (an import run twice, or resumed, adds nothing).
 */
export function importSynthesisResults(out: string, resultsText: string, ids: readonly string[], model?: string): Omit<ImportSummary, 'specs'> {
  const work = workFiles(out);
  fs.mkdirSync(path.dirname(work.answers), { recursive: true });
  repairTail(work.answers);
  const known = readAnswers(work.answers);
  const parsed = parseBatchResults(resultsText, { api: 'chat', expected: ids, ...(model ? { model } : {}) });
  const log = new JsonlAppender(work.answers);
  let imported = 0;
  try {
    for (const id of ids) {
      if (known.has(id)) continue;
      const completion = parsed.results.get(id);
      const failed = parsed.errors.find((e) => e.customId === id);
      let record: AnswerRecord | undefined;
      if (completion) record = { id, texts: completion.samples.map((s) => s.text), usage: completion.usage, via: 'batch' };
      else if (failed) record = { id, texts: [], via: 'batch', error: failed.message };
      if (record) {
        log.append(record);
        imported += 1;
      }
    }
  } finally {
    log.close();
  }
  return { imported, errors: parsed.errors, missing: parsed.missing };
}

export function readRequests(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new SynthesisImportError(`cannot read the requests file ${file}: ${(err as Error).message}`);
  }
}
