import type { Order, OrderLineItem } from '../../generated/prisma/client.ts';
import { knowOrderLines } from '../child-lists.ts';

/**
 * The order a checkout answered, in the shape Prisma would load for `query` (what the GraphQL
 * selection asks: the REST route's is lines, passes and the line count), built from what the
 * checkout's transaction wrote instead of read back: a pending order just made has exactly these
 * lines and no passes. Null when the query asks for anything else (the customer, payments, other
 * counts), which is then loaded (the reload was two Prisma statements and ~2 ms of CPU
 * per checkout).
 */
export function checkedOutOrder(
  query: unknown,
  checkout: { order: Order; lineItems: readonly OrderLineItem[] },
): (Order & Record<string, unknown>) | null {
  const include = onlyKeys(query, ['include']) ? (query as { include?: unknown }).include : undefined;
  if (include === undefined || !onlyKeys(include, ['lineItems', 'passes', '_count'])) return null;
  const wanted = include as { lineItems?: unknown; passes?: unknown; _count?: unknown };
  const answer: Order & Record<string, unknown> = { ...checkout.order };
  // One createdAt for every line: the order is by id, as the database's would be.
  const written = [...checkout.lineItems].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // Order.lineItems (schema/types/order.ts) answers them unless it asks what they name.
  knowOrderLines(answer, written);
  if (wanted.lineItems !== undefined) {
    const lines = wanted.lineItems === true ? {} : wanted.lineItems;
    if (!onlyKeys(lines, ['orderBy', 'include'])) return null;
    const { orderBy, include: nested = {} } = lines as { orderBy?: unknown; include?: unknown };
    // A line's own columns answer every OrderLineItem field; a relation asked of it is loaded.
    if (!onlyKeys(nested, [])) return null;
    if (orderBy !== undefined && JSON.stringify(orderBy) !== KNOWN.lineOrder) return null;
    answer.lineItems = written;
  }
  // Passes are issued on confirmation: a pending order has none, whatever their selection.
  if (wanted.passes !== undefined) answer.passes = [];
  if (wanted._count !== undefined) {
    if (JSON.stringify(wanted._count) !== KNOWN.count) return null;
    answer._count = { lineItems: checkout.lineItems.length };
  }
  return answer;
}

/** The parts of a query checkedOutOrder can answer, as JSON (the Order type's relation queries). */
const KNOWN = {
  lineOrder: JSON.stringify([{ createdAt: 'asc' }, { id: 'asc' }]),
  count: JSON.stringify({ select: { lineItems: true } }),
};

function onlyKeys(value: unknown, allowed: readonly string[]): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).every((key) => allowed.includes(key));
}
