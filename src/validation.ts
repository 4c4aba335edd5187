import type { z } from 'zod';
import { AppError, issuesFrom } from './errors.ts';

/**
 * Input is validated once, by the schema of the service that owns it: both API surfaces hand
 * services what the client sent (`Raw`), and the service's schema decides, with the same words on
 * every surface.
 */

/** What a surface hands a service: the fields of the input, each of any type, for its schema to check. */
export type Raw<T> = { [K in keyof T]?: unknown };

/** The output of `schema` for `input`, or 400 VALIDATION_FAILED naming every problem. */
export function validate<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw AppError.validation(issuesFrom(result.error.issues));
  return result.data;
}
