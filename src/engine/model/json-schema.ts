// A small zod → JSON Schema converter for structured output (response_format
// json_schema). It covers the shapes answer schemas use — objects, arrays,
// tuples, strings, numbers, booleans, enums, literals, unions, nullable and
// optional — and refuses anything else loudly rather than sending a wrong schema.
import { z } from 'zod';

export type JsonSchema = { [key: string]: unknown };

export class UnsupportedSchemaError extends Error {
  override name = 'UnsupportedSchemaError';
}

/**
 * Converts `schema`. Objects come out closed (`additionalProperties: false`)
 * with every property listed in `required`, as OpenAI's strict mode demands;
 * optional properties become nullable instead.
 */
export function toJsonSchema(schema: z.ZodTypeAny): JsonSchema {
  const def = schema._def as { typeName?: string; description?: string };
  const out = convert(schema);
  if (def.description && out.description === undefined) out.description = def.description;
  return out;
}

function convert(schema: z.ZodTypeAny): JsonSchema {
  if (schema instanceof z.ZodString) return { type: 'string' };
  if (schema instanceof z.ZodNumber) {
    const isInt = schema._def.checks.some((c) => c.kind === 'int');
    return { type: isInt ? 'integer' : 'number' };
  }
  if (schema instanceof z.ZodBoolean) return { type: 'boolean' };
  if (schema instanceof z.ZodNull) return { type: 'null' };
  if (schema instanceof z.ZodLiteral) {
    const value = schema._def.value as unknown;
    return { const: value, type: value === null ? 'null' : typeof value === 'number' ? 'number' : typeof value };
  }
  if (schema instanceof z.ZodEnum) return { type: 'string', enum: [...(schema._def.values as string[])] };
  if (schema instanceof z.ZodArray) {
    const out: JsonSchema = { type: 'array', items: toJsonSchema(schema._def.type) };
    if (schema._def.minLength) out.minItems = schema._def.minLength.value;
    if (schema._def.maxLength) out.maxItems = schema._def.maxLength.value;
    if (schema._def.exactLength) {
      out.minItems = schema._def.exactLength.value;
      out.maxItems = schema._def.exactLength.value;
    }
    return out;
  }
  if (schema instanceof z.ZodTuple) {
    const items = (schema._def.items as z.ZodTypeAny[]).map(toJsonSchema);
    return { type: 'array', prefixItems: items, minItems: items.length, maxItems: items.length };
  }
  if (schema instanceof z.ZodObject) {
    const shape = schema.shape as Record<string, z.ZodTypeAny>;
    const properties: Record<string, JsonSchema> = {};
    for (const [key, value] of Object.entries(shape)) {
      properties[key] = value instanceof z.ZodOptional ? nullable(toJsonSchema(value._def.innerType)) : toJsonSchema(value);
    }
    return { type: 'object', properties, required: Object.keys(shape), additionalProperties: false };
  }
  if (schema instanceof z.ZodUnion || schema instanceof z.ZodDiscriminatedUnion) {
    const options = (schema instanceof z.ZodUnion ? schema._def.options : [...schema._def.options.values()]) as z.ZodTypeAny[];
    return { anyOf: options.map(toJsonSchema) };
  }
  if (schema instanceof z.ZodNullable) return nullable(toJsonSchema(schema._def.innerType));
  if (schema instanceof z.ZodOptional) return nullable(toJsonSchema(schema._def.innerType));
  if (schema instanceof z.ZodDefault) return toJsonSchema(schema._def.innerType);
  if (schema instanceof z.ZodEffects) return toJsonSchema(schema._def.schema);
  if (schema instanceof z.ZodBranded) return toJsonSchema(schema._def.type);
  throw new UnsupportedSchemaError(`cannot express ${(schema._def as { typeName?: string }).typeName ?? 'this zod type'} as JSON Schema for structured output`);
}

function nullable(inner: JsonSchema): JsonSchema {
  return { anyOf: [inner, { type: 'null' }] };
}
