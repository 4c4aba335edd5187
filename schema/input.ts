import type { z } from 'zod';
import { builder } from './builder.ts';
import { INPUT_SCHEMA } from '../src/graphql/variables.ts';
import { instant, localDate, timeZone } from '../src/time-zones.ts';
import { colour } from '../src/services/organisation.ts';

/**
 * GraphQL input types generated from the use cases' zod schemas, so that both surfaces hand a use
 * case what the client sent and the use case's schema is the one judge of it (src/validation.ts).
 *
 * The GraphQL type says only what the schema says: a field is required where the schema requires
 * it, an enum where the schema lists values, a scalar where the schema checks a format (DateTime,
 * LocalDate, TimeZone, EmailAddress, URL, HexColorCode). Those scalars check only that the value
 * is a string and pass it on untouched (schema/builder.ts); its format is the use case's to judge.
 * When GraphQL's coercion refuses a value of a generated input object, the refusal is the schema's
 * own verdict on the whole object, naming every wrong field at once (src/graphql/variables.ts).
 *
 * Descriptions stay beside the GraphQL type: the compiler asks for one per field of the schema, so
 * a field added to a use case's schema fails the build until the graph describes it.
 */

type Shape<S> = S extends z.ZodObject<infer T> ? T : never;

interface FieldOptions {
  description: string;
  /** Required in the graph although the schema lets it out (or the other way round). */
  required?: boolean;
  /** The graph's type of a field the schema holds as a nested object: an input generated from it. */
  type?: unknown;
}

type Described<S extends z.ZodObject> = { [K in keyof Shape<S>]: string | FieldOptions };

/** A named zod schema the graph shows as one of its scalars. */
const SCALARS = new Map<z.ZodType, string>([
  [instant, 'DateTime'],
  [localDate, 'LocalDate'],
  [timeZone, 'TimeZone'],
  [colour, 'HexColorCode'],
]);
const FORMAT_SCALARS: Record<string, string> = { email: 'EmailAddress', url: 'URL', datetime: 'DateTime', date: 'LocalDate' };

/** Field names that hold an id of one of the graph's entities (not `clientId`, an identity provider's). */
const NAMES_AN_ENTITY =
  /^(id|ids|(account|organisation|user|role|venue|event|occurrence|ticketType|channel|customer|order|endpoint|pass)Ids?)$/;

/** GraphQL enums by the values they list: a schema's `z.enum` becomes the enum with its values. */
const ENUMS = new Map<string, unknown>();
export function registerEnum(values: readonly string[], ref: unknown): void {
  ENUMS.set([...values].sort().join('|'), ref);
}

interface Judged {
  type: unknown;
  list: boolean;
  optional: boolean;
}

/** The graph's type for one field of a schema. */
function judge(schema: z.ZodType, where: string): Judged {
  let current = schema;
  let optional = false;
  for (;;) {
    const scalar = SCALARS.get(current);
    if (scalar) return { type: scalar, list: false, optional };
    const def = current.def as unknown as { type: string; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType };
    switch (def.type) {
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'catch':
        optional = true;
        current = def.innerType!;
        continue;
      case 'pipe': {
        // A value checked as it comes (`z.unknown().check(…).pipe(z.array(…))`) has its type after the pipe.
        const first = (def.in!.def as { type: string }).type;
        current = first === 'unknown' || first === 'any' ? (def as unknown as { out: z.ZodType }).out : def.in!;
        continue;
      }
      case 'date':
        return { type: 'DateTime', list: false, optional };
      case 'string': {
        const format = (current as unknown as { format?: string | null }).format;
        return { type: (format && FORMAT_SCALARS[format]) ?? 'String', list: false, optional };
      }
      case 'number':
        return { type: /int$/.test((current as unknown as { format?: string }).format ?? '') ? 'Int' : 'Float', list: false, optional };
      case 'boolean':
        return { type: 'Boolean', list: false, optional };
      case 'record':
      case 'object':
        return { type: 'JSONObject', list: false, optional };
      case 'enum': {
        const values = (current as unknown as { options: string[] }).options;
        const ref = ENUMS.get([...values].sort().join('|'));
        return { type: ref ?? 'String', list: false, optional };
      }
      case 'array': {
        const element = judge(def.element!, where);
        if (element.list) throw new Error(`${where}: lists of lists have no GraphQL input type here`);
        return { type: element.type, list: true, optional };
      }
      default:
        throw new Error(`${where}: no GraphQL input type for a zod ${def.type}`);
    }
  }
}

/** Whether a field whose graph type is given is a list and may be left out. */
function judgeGiven(schema: z.ZodType): Omit<Judged, 'type'> {
  try {
    return judge(schema, '');
  } catch {
    return { list: false, optional: schema.safeParse(undefined).success };
  }
}

/**
 * The GraphQL input type of a use case's input schema. `fields` describes each field of the
 * schema (and only those). The generated type carries its schema (`extensions[INPUT_SCHEMA]`).
 */
export function inputFrom<S extends z.ZodObject>(name: string, schema: S, options: { description: string; fields: Described<S> }) {
  const shape = schema.shape as Record<string, z.ZodType>;
  // What a resolver receives is what the client sent, typed as the schema's input (strings for
  // the scalars above): the use case's schema turns it into its output.
  return builder.inputRef<z.input<S>>(name).implement({
    description: options.description,
    extensions: { [INPUT_SCHEMA]: schema },
    fields: (t) =>
      Object.fromEntries(
        Object.entries(shape).map(([field, fieldSchema]) => {
          const described = (options.fields as Record<string, string | FieldOptions>)[field];
          if (described === undefined) throw new Error(`${name}.${field} has no description`);
          const { description, required, type: given } = typeof described === 'string' ? { description: described } : described;
          const judged = given ? { ...judgeGiven(fieldSchema), type: given } : judge(fieldSchema, `${name}.${field}`);
          // A field naming an entity (`venueId`, `roleIds`) takes the graph's ids.
          if (judged.type === 'String' && NAMES_AN_ENTITY.test(field)) judged.type = 'ID';
          const type = (judged.list ? [judged.type] : judged.type) as 'String';
          return [field, t.field({ type, required: required ?? !judged.optional, description })];
        }),
      ) as never,
  });
}
