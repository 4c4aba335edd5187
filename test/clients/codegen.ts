import { fileURLToPath } from 'node:url';
import type { CodegenConfig } from '@graphql-codegen/cli';

/** The printed schema, which /graphql serves (test/clients/apollo.test.ts compares the two). */
export const SCHEMA = fileURLToPath(new URL('../../schema/schema.graphql', import.meta.url));

/** The kept admin operations: the documents an admin frontend sends. */
export const OPERATIONS = fileURLToPath(new URL('./operations/', import.meta.url));

/**
 * The custom scalars as they travel in JSON: instants, days, zones, addresses and links are
 * strings, amounts numbers. With `strictScalars` a scalar added to the schema and missing here fails generation
 * instead of typing as `any`.
 */
export const SCALARS = {
  DateTime: 'string',
  LocalDate: 'string',
  TimeZone: 'string',
  EmailAddress: 'string',
  URL: 'string',
  HexColorCode: 'string',
  SafeInt: 'number',
  JSONObject: 'Record<string, unknown>',
};

/**
 * GraphQL Code Generator's client preset over the kept operations, writing typed documents into
 * `outputDir` (a folder, ending in `/`): what an admin frontend's codegen.ts says, with its own
 * schema and documents (docs/admin-frontends.md, "Typed clients").
 */
export function clientPresetConfig(outputDir: string, documents: string[] = [`${OPERATIONS}*.graphql`]): CodegenConfig {
  return {
    schema: SCHEMA,
    documents,
    generates: {
      [outputDir]: {
        preset: 'client',
        presetConfig: { fragmentMasking: { unmaskFunctionName: 'getFragmentData' } },
        config: { strictScalars: true, scalars: SCALARS, useTypeImports: true },
      },
    },
  };
}
