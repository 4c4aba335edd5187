import {
  coerceInputValue,
  getNamedType,
  GraphQLError,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  Kind,
  typeFromAST,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLEnumType,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { z } from 'zod';
import { cappedIssues, issuesFrom, type ValidationIssue } from '../errors.ts';
import { WORDS } from '../validation.ts';

/**
 * Variables the operation's types refuse (a string where an Int goes, a value outside an enum, an
 * unknown field of an input object, a required field missing), reported before execution as
 * VALIDATION_FAILED with a path per value and the service's words (src/validation.ts), the same
 * for /graphql and for the REST routes that run operations.
 */

const SCALAR_WORDS: Record<string, string> = {
  String: WORDS.string,
  ID: WORDS.string,
  Int: WORDS.wholeNumber,
  Float: WORDS.number,
  Boolean: WORDS.boolean,
  DateTime: WORDS.instant,
  LocalDate: WORDS.date,
  TimeZone: WORDS.timeZone,
  EmailAddress: WORDS.email,
  URL: WORDS.url,
  HexColorCode: WORDS.colour,
  JSONObject: WORDS.object,
};

/**
 * The extension under which an input object type generated from a use case's schema carries that
 * schema (schema/input.ts). When the operation's types refuse a value of such a type, the schema
 * judges the whole value instead, so one answer names every wrong field in the use case's words,
 * not only the first kind of problem GraphQL's coercion met.
 */
export const INPUT_SCHEMA = 'inputSchema';

function schemaBehind(type: GraphQLInputType): z.ZodType | undefined {
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) {
    const items = schemaBehind(inner.ofType);
    return items && z.array(items).nullish();
  }
  return isInputObjectType(inner) ? (inner.extensions as Record<string, z.ZodType | undefined>)[INPUT_SCHEMA] : undefined;
}

/**
 * Whether `value` gives one value where `type` takes a list. GraphQL's coercion would make it a
 * list of one; a use case's schema asks for a list, so for a generated input the schema judges.
 */
function listFromOne(value: unknown, type: GraphQLInputType): boolean {
  if (value === null || value === undefined) return false;
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) return !Array.isArray(value) || value.some((item) => listFromOne(item, inner.ofType));
  if (isInputObjectType(inner) && typeof value === 'object' && !Array.isArray(value)) {
    const fields = inner.getFields();
    return Object.entries(value).some(([name, item]) => fields[name] !== undefined && listFromOne(item, fields[name].type));
  }
  return false;
}

/** What a value of `type` must be, in the service's words. */
export function wordsFor(type: GraphQLInputType): string {
  if (isNonNullType(type)) return wordsFor(type.ofType);
  if (isListType(type)) return WORDS.list;
  if (isEnumType(type)) return WORDS.oneOf(type.getValues().map((value) => value.name));
  if (isInputObjectType(type)) return WORDS.object;
  if (isScalarType(type)) return SCALAR_WORDS[type.name] ?? `a ${type.name}`;
  return 'a valid value';
}

/**
 * `value` with each text at an enum of `type` replaced by `rename(enum, text)`: the one walk that
 * turns the graph's enum names into the contract's values and back (here, and at the /v1 and
 * /live edge: rest-compat/enums.ts). One value where a list goes is renamed as an item.
 */
export function renameEnums(value: unknown, type: GraphQLInputType, rename: (type: GraphQLEnumType, text: string) => string): unknown {
  if (value === null || value === undefined) return value;
  if (isNonNullType(type)) return renameEnums(value, type.ofType, rename);
  if (isListType(type)) {
    return Array.isArray(value) ? value.map((item) => renameEnums(item, type.ofType, rename)) : renameEnums(value, type.ofType, rename);
  }
  if (isEnumType(type)) return typeof value === 'string' ? rename(type, value) : value;
  if (isInputObjectType(type) && typeof value === 'object' && !Array.isArray(value)) {
    const fields = type.getFields();
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([key, item]) => [
        key,
        fields[key] ? renameEnums(item, fields[key].type, rename) : item,
      ]),
    );
  }
  return value;
}

/** The value a use case takes (`on_sale`) of an enum name the graph gave (`ON_SALE`); any other text as it is. */
const valueOfName = (type: GraphQLEnumType, text: string): string => (type.getValue(text)?.value as string | undefined) ?? text;

/**
 * The enum a refusal at `path` inside a value of `type` is about, when the refusal lists the
 * allowed values ("one of …"): each surface then names them in its own words.
 */
export function refusedEnum(type: GraphQLInputType, path: ReadonlyArray<string | number>, message: string): GraphQLEnumType | undefined {
  const named = typeAt(type, path);
  const enumType = named && getNamedType(named);
  return isEnumType(enumType) && /^one of /i.test(message) ? enumType : undefined;
}

/** The input type reached from `type` along `path` (list indexes and field names), if any. */
export function typeAt(type: GraphQLInputType, path: ReadonlyArray<string | number>): GraphQLInputType | undefined {
  let current: GraphQLInputType | undefined = type;
  for (const step of path) {
    if (!current) return undefined;
    if (isNonNullType(current)) current = current.ofType;
    if (typeof step === 'number' || (isListType(current) && /^\d+$/.test(step))) {
      current = isListType(current) ? current.ofType : undefined;
    } else {
      const named = getNamedType(current);
      current = isInputObjectType(named) ? named.getFields()[step]?.type : undefined;
    }
  }
  return current;
}

/** One refused value of a variable: which variable, where inside it, and why. */
export interface VariableIssue extends Omit<ValidationIssue, 'path'> {
  variable: string;
  path: Array<string | number>;
}

/** The document's fragments by name. */
export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fragments;
}

export function operationOf(document: DocumentNode, operationName?: string | null): OperationDefinitionNode | undefined {
  return document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && (!operationName || d.name?.value === operationName),
  );
}

/** Every value of `variables` the operation's declared types refuse (empty when all fit). */
export function variableIssues(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): VariableIssue[] {
  const operation = operationOf(document, operationName);
  const issues: VariableIssue[] = [];
  for (const definition of operation?.variableDefinitions ?? []) {
    const variable = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (!type) continue;
    const value = variables[variable];
    if (value === undefined) {
      if (isNonNullType(type) && !definition.defaultValue) issues.push({ variable, path: [], message: WORDS.required });
      continue;
    }
    const before = issues.length;
    coerceInputValue(value, type, (path, _invalid, error) => {
      const unknown = /^Field "([^"]+)" is not defined by type/.exec(error.message);
      if (unknown) {
        issues.push({ variable, path: [...path, unknown[1]!], message: WORDS.unknownField });
        return;
      }
      const missing = /^Field "([^"]+)" of required type .* was not provided/.exec(error.message);
      if (missing) {
        issues.push({ variable, path: [...path, missing[1]!], message: WORDS.required });
        return;
      }
      const expected = typeAt(type, path);
      const nullGiven = _invalid === null && expected && isNonNullType(expected);
      issues.push({ variable, path: [...path], message: nullGiven ? WORDS.notNull : expected ? wordsFor(expected) : error.message });
    });
    const judge = issues.length > before || listFromOne(value, type) ? schemaBehind(type) : undefined;
    // The schema knows the contract's values (`on_sale`), the graph their names (`ON_SALE`).
    const verdict = judge?.safeParse(renameEnums(value, type, valueOfName));
    if (verdict && !verdict.success) {
      issues.splice(
        before,
        issues.length - before,
        ...issuesFrom(verdict.error.issues).map(({ path, ...issue }) => {
          const steps = path === '(root)' ? [] : path.split('.');
          const enumType = refusedEnum(type, steps, issue.message);
          return { ...issue, variable, path: steps, message: enumType ? wordsFor(enumType) : issue.message };
        }),
      );
    }
  }
  return issues;
}

/** The GraphQL answer for refused variables: 400 VALIDATION_FAILED, details `{path, message}` from `variables.`. */
export function variablesError(issues: readonly VariableIssue[]): GraphQLError {
  const details: ValidationIssue[] = issues.map(({ variable, path, ...issue }) => ({
    ...issue,
    path: ['variables', variable, ...path].join('.'),
  }));
  return new GraphQLError('The request is invalid.', {
    extensions: { code: 'VALIDATION_FAILED', details: cappedIssues(details), http: { status: 400, spec: false } },
  });
}
