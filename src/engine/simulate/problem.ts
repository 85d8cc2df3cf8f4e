// A Problem for self-execution simulation: a statement, public and hidden
// tests, and candidate programs (docs/self-simulation.md#problems). One zod
// schema for the concept; problem files are JSONL, one problem a line, and
// are data from elsewhere: every line is validated, every error names its line.
import { z } from 'zod';

/** A function test: the call, and the value it must return (a Python literal, compared by the judge). */
export const FunctionTestSchema = z.object({ call: z.string().min(1), expected: z.string().min(1) }).strict();
/** A script test: the standard input, and what the program must print (the stdout whitespace rule applies). */
export const ScriptTestSchema = z.object({ stdin: z.string(), expected: z.string() }).strict();
export type FunctionTest = z.infer<typeof FunctionTestSchema>;
export type ScriptTest = z.infer<typeof ScriptTestSchema>;

export const CandidateSchema = z
  .object({
    id: z.string().min(1),
    /** The program: a module defining the function, or a script that reads stdin and prints. */
    code: z.string(),
    /** What the author says the candidate does (`examples/problems` carries it; its test checks it against the real runs). */
    label: z.object({ public: z.boolean(), hidden: z.boolean() }).strict().optional(),
  })
  .strict();
export type Candidate = z.infer<typeof CandidateSchema>;

const common = {
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, ".", "_" and "-" (it names files)'),
  statement: z.string(),
  candidates: z.array(CandidateSchema).min(1),
};

export const ProblemSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('function'), ...common, public: z.array(FunctionTestSchema).min(1), hidden: z.array(FunctionTestSchema) }).strict(),
    z.object({ kind: z.literal('script'), ...common, public: z.array(ScriptTestSchema).min(1), hidden: z.array(ScriptTestSchema) }).strict(),
  ])
  .superRefine((p, ctx) => {
    const seen = new Set<string>();
    p.candidates.forEach((c, i) => {
      if (seen.has(c.id)) ctx.addIssue({ code: 'custom', path: ['candidates', i, 'id'], message: `candidate id '${c.id}' appears twice` });
      seen.add(c.id);
    });
  });
export type Problem = z.infer<typeof ProblemSchema>;
export type Split = 'public' | 'hidden';

/** A problem file that cannot be used; `message` names the line and what is wrong. */
export class ProblemFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProblemFileError';
  }
}

/** The problems of a JSONL text (blank lines skipped). Throws ProblemFileError at the first bad line. */
export function parseProblems(text: string, name = 'problems'): Problem[] {
  const out: Problem[] = [];
  const ids = new Set<string>();
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (err) {
      throw new ProblemFileError(`${name}:${i + 1}: not JSON (${(err as Error).message})`);
    }
    const parsed = ProblemSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ProblemFileError(`${name}:${i + 1}: ${issue.path.join('.') || '(problem)'}: ${issue.message} — see docs/self-simulation.md#problems`);
    }
    if (ids.has(parsed.data.id)) throw new ProblemFileError(`${name}:${i + 1}: problem id '${parsed.data.id}' appears twice`);
    ids.add(parsed.data.id);
    out.push(parsed.data);
  });
  if (out.length === 0) throw new ProblemFileError(`${name}: no problems (one JSON object a line)`);
  return out;
}
