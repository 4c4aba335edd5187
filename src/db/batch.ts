import type { RequestContext } from '../context.ts';

/**
 * Loads by key in batches per request: every key asked while a request's batch is open (the rows
 * of one page resolving their fields in the same tick) is loaded by one call of `load`, so a page
 * of 25 costs one statement, not 25. A batch closes once it is loaded: a later ask reads afresh,
 * so a change made earlier in the same request shows.
 */
export function batched<K, V>(load: (ctx: RequestContext, keys: K[]) => Promise<Map<K, V>>) {
  const open = new WeakMap<RequestContext, { keys: Set<K>; result: Promise<Map<K, V>> }>();
  return (ctx: RequestContext, key: K): Promise<V | undefined> => {
    let batch = open.get(ctx);
    if (!batch) {
      const keys = new Set<K>();
      batch = {
        keys,
        result: new Promise((resolve) => setImmediate(resolve)).then(() => {
          open.delete(ctx);
          return load(ctx, [...keys]);
        }),
      };
      open.set(ctx, batch);
    }
    batch.keys.add(key);
    return batch.result.then((values) => values.get(key));
  };
}
