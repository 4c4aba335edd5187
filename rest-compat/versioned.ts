import type { z } from 'zod';
import {
  CURRENT_VERSION,
  changedSince,
  transformDown,
  transformSchemaDown,
  upgradeInput,
  type JsonObject,
  type VersionedResource,
} from '../src/versions.ts';

/**
 * Dated versions on `/v1` and `/live` (src/versions.ts declares the changes). A route's response
 * and body schemas say where versioned resources sit: a schema marked `versioned(schema,
 * 'Order')` is an Order wherever it appears, at the top, in a list, nested in another resource or
 * in a create or update answer. Each route's places are found once, at start-up, by walking its
 * schemas, so a route that returns an Order cannot forget to shape it; at run time a response at
 * the current version is not touched.
 */

const resources = new WeakMap<z.ZodType, VersionedResource>();

/** Marks `schema` as the shape of `resource` (the current version's), and answers it. */
export function versioned<T extends z.ZodType>(schema: T, resource: VersionedResource): T {
  resources.set(schema, resource);
  return schema;
}

/** Where a resource sits in a JSON value: object keys, and `[]` for every element of an array. */
type Place = { path: readonly string[]; resource: VersionedResource };

interface ZodDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  options?: readonly z.ZodType[];
  in?: z.ZodType;
  out?: z.ZodType;
}

function defOf(schema: z.ZodType): ZodDef {
  return (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
}

/** Every place of a versioned resource in values of `schema`, outermost first. */
export function placesOf(schema: z.ZodType | undefined): Place[] {
  const places: Place[] = [];
  const walk = (node: z.ZodType | undefined, path: string[], depth: number) => {
    if (!node || depth > 12) return;
    const resource = resources.get(node);
    if (resource) places.push({ path, resource });
    const def = defOf(node);
    switch (def.type) {
      case 'object':
        for (const [key, child] of Object.entries(def.shape ?? {})) walk(child, [...path, key], depth + 1);
        break;
      case 'array':
        walk(def.element, [...path, '[]'], depth + 1);
        break;
      case 'nullable':
      case 'optional':
      case 'default':
      case 'prefault':
      case 'readonly':
        walk(def.innerType, path, depth);
        break;
      case 'pipe':
        walk(def.out, path, depth);
        break;
      case 'union':
        for (const option of def.options ?? []) walk(option, path, depth);
        break;
    }
  };
  walk(schema, [], 0);
  // A union may name the same place twice.
  const seen = new Set<string>();
  return places.filter((place) => {
    const key = `${place.path.join('.')}:${place.resource}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` with `change` applied to every object at `path`; innermost places are changed first by the caller's order. */
function mapAt(value: unknown, path: readonly string[], change: (object: JsonObject) => JsonObject): unknown {
  if (path.length === 0) return isObject(value) ? change(value) : value;
  const [head, ...rest] = path as [string, ...string[]];
  if (head === '[]') return Array.isArray(value) ? value.map((item) => mapAt(item, rest, change)) : value;
  if (!isObject(value) || !(head in value)) return value;
  return { ...value, [head]: mapAt(value[head], rest, change) as JsonObject[string] };
}

/** How one route's answers and bodies follow the request's version. */
export interface RouteVersioning {
  /** The response body as `version` shows it. */
  response(body: unknown, version: string): unknown;
  /** A request body written at `version`, in the current shape. */
  body(body: unknown, version: string): unknown;
  /** The resources the route answers or takes (for its documentation and the tests). */
  resources: VersionedResource[];
}

export function routeVersioning(response: z.ZodType | undefined, body: z.ZodType | undefined): RouteVersioning {
  // Innermost first, so a resource nested in another is shaped before its container renames keys around it.
  const out = placesOf(response).reverse();
  const input = placesOf(body).reverse();
  return {
    resources: [...new Set([...out, ...input].map((place) => place.resource))],
    response(value, version) {
      if (version === CURRENT_VERSION) return value;
      let shaped = value;
      for (const place of out) {
        if (changedSince(place.resource, version)) shaped = mapAt(shaped, place.path, (o) => transformDown(place.resource, o, version));
      }
      return shaped;
    },
    body(value, version) {
      if (version === CURRENT_VERSION) return value;
      let upgraded = value;
      for (const place of input) {
        if (changedSince(place.resource, version)) upgraded = mapAt(upgraded, place.path, (o) => upgradeInput(place.resource, o, version));
      }
      return upgraded;
    },
  };
}

/**
 * A JSON Schema (of a route's response or body, as the OpenAPI document prints it) as version
 * `version` shows it: each versioned place of the zod schema it was made from is found in it
 * (`properties`, `items`, and through `anyOf`/`oneOf` options such as a nullable's) and shaped.
 */
export function schemaAtVersion<T extends Record<string, unknown>>(
  json: T,
  zod: z.ZodType | undefined,
  version: string,
  direction: 'input' | 'output',
): T {
  if (version === CURRENT_VERSION) return json;
  let shaped: unknown = json;
  for (const place of placesOf(zod).reverse()) {
    if (!changedSince(place.resource, version)) continue;
    shaped = mapSchemaAt(shaped, place.path, (object) => transformSchemaDown(place.resource, object, version, direction));
  }
  return shaped as T;
}

function mapSchemaAt(node: unknown, path: readonly string[], change: (object: JsonObject) => JsonObject): unknown {
  if (!isObject(node)) return node;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = node[key];
    if (Array.isArray(options)) return { ...node, [key]: options.map((option) => mapSchemaAt(option, path, change)) };
  }
  if (path.length === 0) return isObject(node.properties) ? change(node) : node;
  const [head, ...rest] = path as [string, ...string[]];
  if (head === '[]') return 'items' in node ? { ...node, items: mapSchemaAt(node.items, rest, change) as JsonObject[string] } : node;
  const properties = node.properties;
  if (!isObject(properties) || !(head in properties)) return node;
  return { ...node, properties: { ...properties, [head]: mapSchemaAt(properties[head], rest, change) as JsonObject[string] } };
}
