import { z } from 'zod';
import type { Json, JsonObject } from '../versions.ts';

/**
 * A resource's fields in one home, in the order the wire shows them. Each field says how a
 * hand-written statement selects it, its shape in REST answers (the current version's) and its
 * value in a webhook payload; the statements, the REST selections and response schemas, and the
 * payload views are built from that, so a field added here reaches each of them.
 */
export interface Field<In = never> {
  /**
   * `column`: read from the row; `count`: a subquery beside the row (see TenantSql: `$1` is the
   * organisation). Both are select-list expressions for a table alias. `derived`: computed from
   * other fields by the use case (a wall-clock date from an instant and a zone), never selected.
   */
  role: 'column' | 'count' | 'derived';
  sql: (alias: string, name: string) => string;
  rest: z.ZodType;
  json: (value: In) => Json;
  /** For a field a client may write: the use case's schema of its value (src/resources/event.ts). */
  input?: z.ZodType;
  /** What a new row stores when a create leaves the field out (undefined: the database's default). */
  empty?: unknown;
}

const plain = (alias: string, name: string) => `${alias}."${name}"`;
const same = <T extends Json>(value: T): Json => value;
const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

/** The field builders: each a column of that type unless said otherwise. */
export const fields = {
  text: (sql = plain): Field<string> => ({ role: 'column', sql, rest: z.string(), json: same }),
  boolean: (sql = plain): Field<boolean> => ({ role: 'column', sql, rest: z.boolean(), json: same }),
  int: (sql = plain): Field<number> => ({ role: 'column', sql, rest: z.number(), json: same }),
  /** A text array; a NULL array reads as empty. */
  textList: (): Field<string[]> => ({
    role: 'column',
    empty: [],
    sql: (alias, name) => `coalesce(${alias}."${name}", '{}') AS "${name}"`,
    rest: z.array(z.string()),
    json: same,
  }),
  /** An instant: ISO 8601 on the wire. */
  instant: (): Field<Date | string> => ({ role: 'column', sql: plain, rest: z.string(), json: iso }),
  /** A PostgreSQL enum, read as text, of the values `rest` allows. */
  enumText: (rest: z.ZodType): Field<string> => ({
    role: 'column',
    sql: (alias, name) => `${alias}."${name}"::text AS "${name}"`,
    rest,
    json: same,
  }),
  /** A count beside the row; `sql` is its subquery given the row's alias. */
  count: (sql: (alias: string) => string): Field<number> => ({
    role: 'count',
    sql: (alias, name) => `${sql(alias)} AS "${name}"`,
    rest: z.number(),
    json: same,
  }),
  /** A value the use case computes from other fields; `rest` is its shape in REST answers. */
  derived: (rest: z.ZodType): Field<string> => ({
    role: 'derived',
    sql: () => {
      throw new Error('a derived field is computed, not selected');
    },
    rest,
    json: same,
  }),
  /** `field`, or null (a payload shows null, never leaves it out). */
  nullable: <In>(field: Field<In>): Field<In | null | undefined> => ({
    ...field,
    empty: null,
    rest: field.rest.nullable(),
    json: (value) => (value == null ? null : field.json(value)),
  }),
  /** `field`, which a client may write, its value judged by `input`. */
  writable: <In, S extends z.ZodType>(field: Field<In>, input: S): Field<In> & { input: S } => ({ ...field, input }),
};

type FieldsOf = Record<string, Field<never>>;
type InputOf<F> = F extends Field<infer In> ? In : never;

export interface Resource<F extends FieldsOf> {
  readonly fields: F;
  /** The names, in wire order. */
  readonly names: ReadonlyArray<keyof F & string>;
  /** A GraphQL selection of `names` (all by default), for the REST routes' operations. */
  selection(names?: ReadonlyArray<keyof F & string>): string;
  /** The REST response schema of `names` (all by default) in that order; `overrides` replace a field's shape. */
  rest<N extends keyof F & string>(names?: readonly N[], overrides?: Partial<Record<N, z.ZodType>>): z.ZodObject<Record<N, z.ZodType>>;
  /** The select list of the columns (`role` column) among `names` (all by default), for a table alias. */
  columns(alias: string, names?: ReadonlyArray<keyof F & string>): string;
  /** The select list of its counts. */
  counts(alias: string): string;
  /** A payload view: exactly `names`, in that order, each as its field makes it (nullable ones present as null). */
  view<N extends keyof F & string>(names: readonly N[]): (value: { [K in N]: InputOf<F[K]> }) => JsonObject;
  /** The schemas of the fields a client may write, for the use cases' input schemas. */
  writable(): { [K in WritableNames<F>]: F[K] extends { input: infer S } ? S : never };
  /** A new row's writable fields: each as `input` gives it, else its empty value. */
  created(input: Record<string, unknown>): Record<string, unknown>;
  /** A change's writable fields: those `input` gives (null included), nothing else. */
  changes(input: Record<string, unknown>): Record<string, unknown>;
}

type WritableNames<F> = { [K in keyof F]: F[K] extends { input: z.ZodType } ? K : never }[keyof F] & string;

export function resource<F extends FieldsOf>(fieldsOf: F): Resource<F> {
  type Name = keyof F & string;
  const names = Object.keys(fieldsOf) as Name[];
  const of = (role: Field['role'], alias: string, chosen: readonly Name[]) =>
    chosen
      .filter((name) => fieldsOf[name]!.role === role)
      .map((name) => fieldsOf[name]!.sql(alias, name))
      .join(', ');
  const writable = names.filter((name) => fieldsOf[name]!.input !== undefined);
  return {
    fields: fieldsOf,
    names,
    selection: (chosen = names) => chosen.join(' '),
    rest: <N extends Name>(chosen: readonly N[] = names as N[], overrides: Partial<Record<N, z.ZodType>> = {}) =>
      z.object(Object.fromEntries(chosen.map((name) => [name, overrides[name] ?? fieldsOf[name]!.rest])) as Record<N, z.ZodType>),
    columns: (alias, chosen = names) => of('column', alias, chosen),
    counts: (alias) => of('count', alias, names),
    view: <N extends Name>(chosen: readonly N[]) => {
      const json = chosen.map((name) => [name, fieldsOf[name]!.json as (value: unknown) => Json] as const);
      return (value: { [K in N]: InputOf<F[K]> }) => {
        const out: JsonObject = {};
        for (const [name, toJson] of json) out[name] = toJson((value as Record<string, unknown>)[name]);
        return out;
      };
    },
    writable: () => Object.fromEntries(writable.map((name) => [name, fieldsOf[name]!.input!])) as never,
    created: (input) => Object.fromEntries(writable.map((name) => [name, input[name] ?? fieldsOf[name]!.empty])),
    changes: (input) => Object.fromEntries(writable.filter((name) => input[name] !== undefined).map((name) => [name, input[name]])),
  };
}
