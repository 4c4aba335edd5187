import {
  getNamedType,
  isEnumType,
  isInterfaceType,
  isObjectType,
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type GraphQLEnumType,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import { operationOf, renameEnums } from '../src/graphql/variables.ts';

/**
 * The graph names enum values UPPER_CASE (`ON_SALE`); `/v1`, `/live` and webhooks carry the
 * contract's values (`on_sale`). A route translates at its edge: a value the client sent that is
 * one of an enum's values becomes its name before the operation runs (anything else goes on as
 * sent, for the use case to refuse in its words), and every enum in the answer becomes its value.
 * test/platform/enums.test.ts holds both surfaces to this.
 */

/** `value` with each enum value the client sent (`on_sale`) named as the graph names it (`ON_SALE`). */
export function namesIn(value: unknown, type: GraphQLInputType): unknown {
  return renameEnums(value, type, (enumType, text) => nameOf(enumType, text) ?? notAName(enumType, text));
}

/**
 * A text that is none of the contract's values goes on to be refused, even when it happens to be
 * one of the graph's names (`ON_SALE` on /v1): it is marked so that no name matches it, and the
 * refusal is worded by the enum's values as before.
 */
function notAName(type: GraphQLEnumType, value: string): string {
  return type.getValue(value) ? `${value} ` : value;
}

function nameOf(type: GraphQLEnumType, value: string): string | undefined {
  return type.getValues().find((entry) => entry.value === value)?.name;
}

/** Where an answer holds enums: the enum at a key, or the keys below it that lead to one. */
type EnumPlaces = Map<string, GraphQLEnumType | EnumPlaces>;

/**
 * The places of an operation's answer that hold enums, found once per route from its document:
 * answers are then translated by walking only those.
 */
export function enumPlaces(schema: GraphQLSchema, document: DocumentNode): EnumPlaces | undefined {
  const operation = operationOf(document);
  const root = operation?.operation === OperationTypeNode.MUTATION ? schema.getMutationType() : schema.getQueryType();
  return operation && root ? placesIn(operation.selectionSet, root) : undefined;
}

function placesIn(selectionSet: SelectionSetNode, parent: GraphQLNamedType): EnumPlaces | undefined {
  if (!isObjectType(parent) && !isInterfaceType(parent)) return undefined;
  const places: EnumPlaces = new Map();
  for (const selection of selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) continue;
    const field = parent.getFields()[selection.name.value];
    if (!field) continue;
    const named = getNamedType(field.type);
    const key = selection.alias?.value ?? selection.name.value;
    if (isEnumType(named)) places.set(key, named);
    else if (selection.selectionSet) {
      const below = placesIn(selection.selectionSet, named);
      if (below) places.set(key, below);
    }
  }
  return places.size > 0 ? places : undefined;
}

/** `data` with every enum name (`ON_SALE`) at `places` given as the contract's value (`on_sale`). */
export function valuesIn(data: unknown, places: EnumPlaces | undefined): unknown {
  if (!places || data === null || typeof data !== 'object') return data;
  if (Array.isArray(data)) return data.map((item) => valuesIn(item, places));
  const out = { ...(data as Record<string, unknown>) };
  for (const [key, place] of places) {
    const value = out[key];
    if (value === null || value === undefined) continue;
    out[key] = place instanceof Map ? valuesIn(value, place) : valueOf(place, value);
  }
  return out;
}

function valueOf(type: GraphQLEnumType, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => valueOf(type, item));
  return typeof value === 'string' ? (type.getValue(value)?.value ?? value) : value;
}
