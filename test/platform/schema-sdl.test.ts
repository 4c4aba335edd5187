import { readFileSync } from 'node:fs';
import { buildSchema, isObjectType, isInputObjectType, isEnumType } from 'graphql';
import { expect, it } from 'vitest';
import { printedSdl, SDL_PATH } from '../../schema/print.ts';

it('the committed SDL in schema/schema.graphql matches the code (run `npm run generate`)', () => {
  expect(readFileSync(SDL_PATH, 'utf8')).toBe(printedSdl());
});

it('every type and field of the schema is documented', () => {
  const schema = buildSchema(printedSdl());
  const missing: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__')) continue;
    if (!type.description) missing.push(type.name);
    if (isObjectType(type) || isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) if (!field.description) missing.push(`${type.name}.${field.name}`);
    }
    if (isEnumType(type)) {
      for (const value of type.getValues()) if (!value.description) missing.push(`${type.name}.${value.name}`);
    }
  }
  expect(missing.filter((name) => !['Boolean', 'String', 'Int', 'Float', 'ID'].includes(name))).toEqual([]);
});
