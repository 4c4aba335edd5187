import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Which fields a query selects under the field being resolved, so a resolver can read in one
 * statement what the selection will ask next (a page's sales counters, the events its lines name:
 * src/services/child-lists.ts) instead of leaving it to a batch of its own.
 */

/** The fields selected directly in `selectionSet`, through fragments. */
function fieldsOf(info: GraphQLResolveInfo, selectionSet: SelectionSetNode | undefined, visited = new Set<string>()): FieldNode[] {
  if (!selectionSet) return [];
  return selectionSet.selections.flatMap((selection) => {
    if (selection.kind === Kind.FIELD) return [selection];
    if (selection.kind === Kind.INLINE_FRAGMENT) return fieldsOf(info, selection.selectionSet, visited);
    const name = selection.name.value;
    const fragment = info.fragments[name];
    if (!fragment || visited.has(name)) return [];
    visited.add(name);
    return fieldsOf(info, fragment.selectionSet, visited);
  });
}

/**
 * Answers per field of a document: every row of a page resolves the same field nodes (25 orders
 * ask for their lines' events 25 times).
 */
const answered = new WeakMap<readonly FieldNode[], Map<string, boolean>>();

/** Whether the field being resolved selects `path` (field names, one level each) under it. */
export function selects(info: GraphQLResolveInfo, path: readonly string[]): boolean {
  let known = answered.get(info.fieldNodes);
  if (!known) answered.set(info.fieldNodes, (known = new Map<string, boolean>()));
  const key = path.join('.');
  let answer = known.get(key);
  if (answer === undefined) known.set(key, (answer = walk(info, path)));
  return answer;
}

function walk(info: GraphQLResolveInfo, path: readonly string[]): boolean {
  let level: FieldNode[] = [...info.fieldNodes];
  for (const name of path) {
    level = level.flatMap((node) => fieldsOf(info, node.selectionSet)).filter((field) => field.name.value === name);
    if (level.length === 0) return false;
  }
  return true;
}

/** Whether a connection field selects `field` on its nodes (`nodes { field }` or `edges { node { field } }`). */
export function selectsOnNodes(info: GraphQLResolveInfo, field: string): boolean {
  return selects(info, ['nodes', field]) || selects(info, ['edges', 'node', field]);
}
