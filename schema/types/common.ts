import type { SchemaTypes } from '@pothos/core';
import { builder } from '../builder.ts';
import { registerEnum } from '../input.ts';
import { describeValues, STATUSES, type StatusList } from '../../src/statuses.ts';

export const SuccessResult = builder.objectRef<{ success: boolean }>('SuccessResult').implement({
  description: 'The outcome of an operation that answers nothing else.',
  fields: (t) => ({
    success: t.exposeBoolean('success', { description: 'Whether it succeeded.' }),
  }),
});

/**
 * A value's name in the graph: UPPER_CASE (`on_sale` is `ON_SALE`), as GraphQL clients and their
 * code generators expect. The value a resolver, a use case, `/v1`, `/live` and webhooks see stays
 * the contract's lower-case one: `/v1` and `/live` translate at their edge (rest-compat/enums.ts).
 */
export const enumName = (value: string): string => value.toUpperCase();

/**
 * Values as the graph names them, for a description: "DRAFT (default), PUBLISHED or …". A client
 * sends and reads the names; the lower-case values are `/v1`'s and `/live`'s.
 */
export function describeEnumValues(values: readonly string[], options: { default?: string } = {}): string {
  return describeValues(values.map(enumName), { default: options.default && enumName(options.default) });
}

/** One of the status lists as the graph names its values (see describeEnumValues). */
export function describeEnumStatuses<K extends StatusList>(list: K, options: { default?: (typeof STATUSES)[K][number] } = {}): string {
  return describeEnumValues(STATUSES[list], options);
}

/** A GraphQL enum of `values` (each with its description), named UPPER_CASE, valued as given. */
export function valuesEnum<V extends string>(name: string, description: string, values: Record<V, string>) {
  const entries = Object.entries<string>(values).map(([value, about]) => [enumName(value), { value, description: about }]);
  const ref = builder.enumType(name, {
    description,
    values: Object.fromEntries(entries) as Record<string, { value: V; description: string }>,
  }) as unknown as PothosSchemaTypes.EnumRef<SchemaTypes, V, V>;
  // Inputs generated from a use case's schema take this enum where the schema lists these values.
  registerEnum(Object.keys(values), ref);
  return ref;
}

/**
 * A GraphQL enum of one of the service's status lists (src/statuses.ts, the database's enums): the
 * values come from the list; the compiler holds the descriptions to it, so a value added to the
 * database enum fails the build until it is described here.
 */
export function statusEnum<K extends StatusList>(
  name: string,
  list: K,
  description: string,
  values: Record<(typeof STATUSES)[K][number], string>,
) {
  const ordered = Object.fromEntries(
    (STATUSES[list] as readonly string[]).map((value) => [value, (values as Record<string, string>)[value]!]),
  );
  return valuesEnum(name, description, ordered as Record<(typeof STATUSES)[K][number], string>);
}

/** The direction of a list a client sorts (`events(orderBy:)`, `customers(orderBy:)`). */
export const OrderDirection = valuesEnum('OrderDirection', 'Which way a sorted list runs.', {
  asc: 'Ascending: earliest, smallest or A first.',
  desc: 'Descending: latest, largest or Z first.',
});
