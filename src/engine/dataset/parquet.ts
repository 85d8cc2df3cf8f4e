// Parquet writing for the exporters: a tiny typed schema (string, int, double,
// struct, list) turned into the Parquet schema tree that pyarrow, Hugging Face
// datasets and verl read, written in pure JS by hyparquet-writer (no native code).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';

/** A column type; every field is nullable (OPTIONAL), as pandas/pyarrow write them. */
export type ParquetType = 'string' | 'int64' | 'double' | 'bool' | { struct: [string, ParquetType][] } | { list: ParquetType };

export type ParquetColumns = [string, ParquetType][];

// hyparquet-writer's SchemaElement, as far as we use it.
interface SchemaElement {
  name: string;
  type?: 'BYTE_ARRAY' | 'INT64' | 'DOUBLE' | 'BOOLEAN';
  converted_type?: 'UTF8' | 'LIST';
  repetition_type?: 'OPTIONAL' | 'REPEATED' | 'REQUIRED';
  num_children?: number;
}

function elements(name: string, type: ParquetType): SchemaElement[] {
  if (type === 'string') return [{ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' }];
  if (type === 'int64') return [{ name, type: 'INT64', repetition_type: 'OPTIONAL' }];
  if (type === 'double') return [{ name, type: 'DOUBLE', repetition_type: 'OPTIONAL' }];
  if (type === 'bool') return [{ name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' }];
  if ('struct' in type) {
    return [
      { name, repetition_type: 'OPTIONAL', num_children: type.struct.length },
      ...type.struct.flatMap(([child, childType]) => elements(child, childType)),
    ];
  }
  // The three-level LIST layout of the Parquet spec (what pyarrow writes).
  return [
    { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    ...elements('element', type.list),
  ];
}

/** Parquet wants bigint for INT64 leaves; everything else passes through. */
function toParquetValue(type: ParquetType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'int64') return BigInt(Math.trunc(Number(value)));
  if (type === 'double') return Number(value);
  if (type === 'string') return String(value);
  if (type === 'bool') return Boolean(value);
  if ('struct' in type) {
    const obj = value as Record<string, unknown>;
    return Object.fromEntries(type.struct.map(([k, t]) => [k, toParquetValue(t, obj[k])]));
  }
  return (value as unknown[]).map((v) => toParquetValue(type.list, v));
}

/** Encodes rows (objects keyed by column name) as one Parquet file. */
export function encodeParquet(columns: ParquetColumns, rows: Record<string, unknown>[]): Uint8Array {
  const schema = [{ name: 'root', num_children: columns.length }, ...columns.flatMap(([name, type]) => elements(name, type))];
  const columnData = columns.map(([name, type]) => ({
    name,
    data: rows.map((row) => toParquetValue(type, row[name])),
  }));
  // hyparquet-writer's types name its own SchemaElement; ours is a structural subset.
  const buffer = parquetWriteBuffer({ columnData, schema: schema as never, rowGroupSize: 10_000 });
  return new Uint8Array(buffer);
}

/** Writes atomically (temp file + rename) so a reader never sees half a file. */
export function writeFileAtomic(file: string, data: Uint8Array | string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, file);
}
