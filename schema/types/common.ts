import { builder } from '../builder.ts';
import { registerEnum } from '../input.ts';
import { STATUSES, type StatusList } from '../../src/statuses.ts';

export const DeleteResult = builder.objectRef<{ success: boolean; id: string }>('DeleteResult').implement({
  description: 'The outcome of a deletion.',
  fields: (t) => ({
    success: t.exposeBoolean('success', { description: 'Whether the thing was deleted.' }),
    id: t.exposeString('id', { description: 'Id of the deleted thing.' }),
  }),
});

export const SuccessResult = builder.objectRef<{ success: boolean }>('SuccessResult').implement({
  description: 'The outcome of an operation that answers nothing else.',
  fields: (t) => ({
    success: t.exposeBoolean('success', { description: 'Whether it succeeded.' }),
  }),
});

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
  const entries = (STATUSES[list] as readonly string[]).map((value) => [
    value,
    { description: (values as Record<string, string>)[value]! },
  ]);
  const ref = builder.enumType(name, {
    description,
    values: Object.fromEntries(entries) as Record<(typeof STATUSES)[K][number], { description: string }>,
  });
  // Inputs generated from a use case's schema take this enum where the schema lists these values.
  registerEnum(STATUSES[list], ref);
  return ref;
}
