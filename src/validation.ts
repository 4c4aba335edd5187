import { z } from 'zod';
import { AppError, issuesFrom } from './errors.ts';

/**
 * Input is validated once, by the schema of the service that owns it: both API surfaces hand
 * services what the client sent (`Raw`), and the service's schema decides. A refusal is worded the
 * same wherever it happens: the words below are zod's messages for every schema that does not say
 * its own, and the GraphQL layer (src/graphql/variables.ts) uses them for values its types refuse.
 */

/** What a surface hands a service: the fields of the input, each of any type, for its schema to check. */
export type Raw<T> = { [K in keyof T]?: unknown };

/** The output of `schema` for `input`, or 400 VALIDATION_FAILED naming every problem. */
export function validate<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw AppError.validation(issuesFrom(result.error.issues));
  return result.data;
}

/**
 * An id a request names (an accountId, a roleId): any text of 1 to 128 characters, judged by looking
 * it up, so one of another kind or of another organisation is 404 NOT_FOUND naming the field, as
 * the contract answers one in a path; never a 400 that tells the two apart
 * (test/platform/input-ranges.test.ts).
 */
export const reference = z.string().min(1).max(128);

/**
 * A JSON object a client stores as it is (an organisation's metadata, an identity provider's
 * configuration): bounded by its size as JSON, the refusal naming the limit (`maxBytes`).
 */
export function jsonObjectWithin(maxBytes: number) {
  return z.record(z.string(), z.unknown()).refine((value) => Buffer.byteLength(JSON.stringify(value)) <= maxBytes, {
    message: `at most ${maxBytes / 1024} KiB of JSON`,
    params: { limit: 'maxBytes', max: maxBytes },
  });
}

/** How the service describes what a value must be. */
export const WORDS = {
  required: 'required',
  notNull: 'must not be null',
  string: 'a string',
  number: 'a number',
  wholeNumber: 'a whole number',
  boolean: 'true or false',
  list: 'a list',
  object: 'an object',
  unknownField: 'unknown field',
  email: 'an email address',
  url: 'a URL',
  instant: 'an ISO 8601 date and time with Z or an offset, e.g. 2026-07-04T19:30:00+01:00',
  date: 'a date as YYYY-MM-DD',
  time: 'a time of day as HH:MM (00:00 to 23:59)',
  timeZone: 'an IANA time zone name such as Europe/London or UTC',
  colour: 'a colour: # followed by six hex digits',
  oneOf: (values: readonly unknown[]) => `one of ${values.map(String).join(', ')}`,
  atLeast: (min: number | bigint, what?: 'characters' | 'items') => (what ? `at least ${min} ${plural(min, what)}` : `at least ${min}`),
  atMost: (max: number | bigint, what?: 'characters' | 'items') => (what ? `at most ${max} ${plural(max, what)}` : `at most ${max}`),
} as const;

function plural(n: number | bigint, what: 'characters' | 'items'): string {
  return Number(n) === 1 ? what.slice(0, -1) : what;
}

const TYPE_WORDS: Record<string, string> = {
  string: WORDS.string,
  number: WORDS.number,
  int: WORDS.wholeNumber,
  bigint: WORDS.wholeNumber,
  boolean: WORDS.boolean,
  array: WORDS.list,
  object: WORDS.object,
  record: WORDS.object,
  date: WORDS.instant,
};

const FORMAT_WORDS: Record<string, string> = {
  email: WORDS.email,
  url: WORDS.url,
  datetime: WORDS.instant,
  date: WORDS.date,
  time: WORDS.time,
};

const sized = (origin: string | undefined) =>
  origin === 'string' ? 'characters' : origin === 'array' || origin === 'set' ? 'items' : undefined;

z.config({
  customError: (issue) => {
    switch (issue.code) {
      case 'invalid_type':
        if (issue.input === undefined) return WORDS.required;
        if (issue.input === null) return WORDS.notNull;
        return TYPE_WORDS[issue.expected] ?? undefined;
      case 'too_small':
        return WORDS.atLeast(issue.minimum, sized(issue.origin));
      case 'too_big':
        return WORDS.atMost(issue.maximum, sized(issue.origin));
      case 'invalid_value':
        return WORDS.oneOf(issue.values);
      case 'invalid_format':
        return FORMAT_WORDS[issue.format] ?? undefined;
      case 'unrecognized_keys':
        return WORDS.unknownField;
      default:
        return undefined;
    }
  },
});
