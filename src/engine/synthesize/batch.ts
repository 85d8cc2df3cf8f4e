// The offline road: synthesis requests as an OpenAI Batch JSONL file (the
// model layer's batch writer: vLLM's run_batch and hosted batch APIs read
// it), and a result file imported back into work/answers.jsonl, after which
// the pipeline runs exactly as online.
import * as fs from 'node:fs';
import { batchRequestLines, BatchRequestLineSchema, parseBatchResults, writeBatchFile, type BatchLineError, type BatchSettings } from '../model/batch';
import { chatPrompt } from '../model/prompt';
import { JsonlAppender } from '../dataset/store';
import { parseSpecId, sampleSpec, type Constraints, type Spec } from './constraints';
import { readAnswers, workFiles, type AnswerRecord } from './pipeline';
import { SYNTHESIS_PROMPT_VERSION, synthesisPrompt } from './prompt';

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
 * The specs of a request file, made again from their custom_ids with the
 * given constraints (and levels); a request whose prompt is not the one they
 * make was written with other constraints, and is refused with what to pass.
 */
export function specsOfRequests(text: string, constraints: Constraints, settings: BatchSettings, levels?: readonly number[]): Spec[] {
  const specs: Spec[] = [];
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
    const id = parseSpecId(line.data.custom_id);
    if (!id) throw new SynthesisImportError(`requests line ${i + 1}: custom_id '${line.data.custom_id}' was not written by \`execverify synthesize prompts\``);
    const spec = sampleSpec(constraints, id.seed, id.index, levels);
    const [expected] = batchRequestLines({ ...settings, api: 'chat' }, synthesisBatchItems([spec], constraints));
    if (JSON.stringify(expected!.body.messages) !== JSON.stringify(line.data.body.messages)) {
      throw new SynthesisImportError(
        `requests line ${i + 1} (${spec.id}) holds another prompt than these constraints make: pass the --constraints and --levels the requests were written with`,
      );
    }
    specs.push(spec);
  }
  return specs;
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
export function importSynthesisResults(out: string, resultsText: string, specs: readonly Spec[], model?: string): Omit<ImportSummary, 'specs'> {
  const work = workFiles(out);
  const known = readAnswers(work.answers);
  const ids = specs.map((s) => s.id);
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
