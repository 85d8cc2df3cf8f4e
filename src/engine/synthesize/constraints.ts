// Synthesis constraints: a versioned data file (constraints/*.json) that a
// user may replace (`--constraints FILE`), and the seeded sampling of one
// combination per requested program (a Spec, recorded with every sample).
import * as fs from 'node:fs';
import { z } from 'zod';
import { seededRng, seedFrom, type Rng } from '../questions/rng';
import builtin from './constraints/execverify.json';

export const CONSTRAINTS_SCHEMA = 'execverify.synthesis-constraints/1';
export const VARIANTS = ['one_function', 'two_functions'] as const;
export const DEPTHS = ['0', '1', '2', '3'] as const;

export const LevelSchema = z.object({
  level: z.number().int().positive(),
  name: z.string(),
  /** How many built-in types a program at this level must use. */
  types: z.number().int().positive(),
  /** How many methods (over those types) it must call. */
  methods: z.number().int().positive(),
  /** Whether a nested-call constraint is added. */
  nested: z.boolean(),
  variants: z.array(z.enum(VARIANTS)).min(1),
  /** Control-flow depths (keys of `blueprints`) a program at this level may get. */
  depths: z.array(z.number().int().min(0).max(3)).min(1),
});
export type Level = z.infer<typeof LevelSchema>;

export const ConstraintsSchema = z
  .object({
    schema: z.literal(CONSTRAINTS_SCHEMA),
    name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
    /** Bumped whenever a list changes; recorded with every sample (`name@version`). */
    version: z.string().min(1),
    description: z.string().default(''),
    /** Built-in type (or "builtins") → the methods / functions a program may be asked to use. */
    types: z.record(z.array(z.string().min(1)).min(1)),
    nested: z.array(z.string().min(1)).min(1),
    variants: z.object({ one_function: z.string(), two_functions: z.string() }),
    /** Control-flow blueprints by nesting depth 0–3. */
    blueprints: z.object({
      '0': z.array(z.string()).min(1),
      '1': z.array(z.string()).min(1),
      '2': z.array(z.string()).min(1),
      '3': z.array(z.string()).min(1),
    }),
    levels: z.array(LevelSchema).min(1),
  })
  .superRefine((c, ctx) => {
    const typeCount = Object.keys(c.types).length;
    for (const [i, l] of c.levels.entries()) {
      if (l.types > typeCount)
        ctx.addIssue({ code: 'custom', path: ['levels', i, 'types'], message: `asks for ${l.types} types; the file lists ${typeCount}` });
    }
    if (new Set(c.levels.map((l) => l.level)).size !== c.levels.length)
      ctx.addIssue({ code: 'custom', path: ['levels'], message: 'two levels share a number' });
  });
export type Constraints = z.infer<typeof ConstraintsSchema>;

/** The constraint combination one program is asked to satisfy: stored with every sample it yields. */
export const SpecConstraintsSchema = z.object({
  types: z.array(z.object({ type: z.string(), methods: z.array(z.string()) })),
  nested: z.string().nullable(),
  variant: z.enum(VARIANTS),
  depth: z.number().int().min(0).max(3),
  blueprint: z.string(),
});
export type SpecConstraints = z.infer<typeof SpecConstraintsSchema>;

export const SpecSchema = z.object({
  /** `s<seed>-<index>`: the Batch custom_id, and how a sample finds its request again. */
  id: z.string(),
  index: z.number().int().nonnegative(),
  seed: z.number().int().nonnegative(),
  level: z.number().int().positive(),
  /** `name@version` of the constraints file. */
  constraintsVersion: z.string(),
  constraints: SpecConstraintsSchema,
});
export type Spec = z.infer<typeof SpecSchema>;

export class ConstraintsError extends Error {
  override name = 'ConstraintsError';
}

/** The built-in constraints, or a user's file in the same format (it replaces them whole). */
export function loadConstraints(file?: string): Constraints {
  let raw: unknown = builtin;
  if (file) {
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ConstraintsError(`cannot read the constraints file ${file}: ${(err as Error).message}`);
    }
  }
  const parsed = ConstraintsSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
    throw new ConstraintsError(`${file ?? 'the built-in constraints'} is not a ${CONSTRAINTS_SCHEMA} file: ${issues} (see docs/synthesis.md#constraints)`);
  }
  return parsed.data;
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng.next() * items.length)]!;
}

/**
 * Spec number `index` of a run with `seed`: a level in turn (an even
 * curriculum), then its types, methods, variant, depth, blueprint and nested
 * constraint drawn from a generator seeded by (seed, index) alone — so the
 * first N specs are the same whatever the count, and the same on every machine.
 */
export function sampleSpec(constraints: Constraints, seed: number, index: number, levels?: readonly number[]): Spec {
  const pool = levels?.length ? constraints.levels.filter((l) => levels.includes(l.level)) : constraints.levels;
  if (pool.length === 0) throw new ConstraintsError(`no level ${levels?.join(', ')} in ${constraints.name}@${constraints.version}`);
  const level = pool[index % pool.length]!;
  const rng = seededRng(seedFrom(`${seed}\u0000${index}`));
  const types = rng.shuffle(Object.keys(constraints.types)).slice(0, level.types).sort();
  // Methods spread over the chosen types, each type getting at least one.
  const perType = new Map<string, string[]>(types.map((t) => [t, []]));
  const menu = new Map(types.map((t) => [t, rng.shuffle(constraints.types[t]!)]));
  for (let m = 0; m < Math.max(level.methods, types.length); m++) {
    const t = m < types.length ? types[m]! : pick(rng, types);
    const next = menu.get(t)!.shift();
    if (next) perType.get(t)!.push(next);
  }
  const depth = pick(rng, level.depths);
  const blueprint = pick(rng, constraints.blueprints[String(depth) as (typeof DEPTHS)[number]]);
  const variant = pick(rng, level.variants);
  const nested = level.nested ? pick(rng, constraints.nested) : null;
  return {
    id: `s${seed}-${index}`,
    index,
    seed,
    level: level.level,
    constraintsVersion: `${constraints.name}@${constraints.version}`,
    constraints: {
      types: types.map((type) => ({ type, methods: perType.get(type)!.sort() })),
      nested,
      variant,
      depth,
      blueprint,
    },
  };
}

/** Specs `start` … `start + count - 1` of a run with `seed`. */
export function sampleSpecs(constraints: Constraints, options: { count: number; seed: number; start?: number; levels?: readonly number[] }): Spec[] {
  const start = options.start ?? 0;
  return Array.from({ length: options.count }, (_, i) => sampleSpec(constraints, options.seed, start + i, options.levels));
}

/** Parses a custom_id written by sampleSpec (`s<seed>-<index>`). */
export function parseSpecId(id: string): { seed: number; index: number } | undefined {
  const m = /^s(\d+)-(\d+)$/.exec(id);
  return m ? { seed: Number(m[1]), index: Number(m[2]) } : undefined;
}
