import { readdirSync, readFileSync } from 'node:fs';
import { buildSchema, isAbstractType, parse, separateOperations, type DocumentNode } from 'graphql';
import { OPERATIONS, SCHEMA } from './codegen.ts';

/**
 * The kept admin operations (test/clients/operations/*.graphql), each as the document a client
 * sends: the operation and the fragments it spreads.
 */
export function keptOperations(): Record<string, DocumentNode> {
  const files = readdirSync(OPERATIONS).filter((file) => file.endsWith('.graphql'));
  const document = parse(files.map((file) => readFileSync(`${OPERATIONS}${file}`, 'utf8')).join('\n'));
  return separateOperations(document);
}

/**
 * Apollo's `possibleTypes` from the printed schema: every interface (`Node`) and union with the
 * types that implement it, so fragments on them match the cached objects.
 */
export function possibleTypes(): Record<string, string[]> {
  const schema = buildSchema(readFileSync(SCHEMA, 'utf8'));
  return Object.fromEntries(
    Object.values(schema.getTypeMap())
      .filter(isAbstractType)
      .map((type) => [type.name, schema.getPossibleTypes(type).map((member) => member.name)]),
  );
}
