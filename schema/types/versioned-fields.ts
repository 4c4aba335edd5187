import { API_VERSIONS, renamedFieldReason, type VersionedResource } from '../../src/versions.ts';
import { builder } from '../builder.ts';
import { Event } from './event.ts';
import { ListingEventRef } from './listing.ts';
import { Customer, Order, Redemption } from './order.ts';

/**
 * GraphQL keeps one schema whatever the request's version (Service-Version changes nothing here):
 * a field a dated version renamed (src/versions.ts) stays under its old name, deprecated with the
 * version that renamed it, and reads the new field, so old queries keep working. Fields a version
 * removed stay where they are declared, deprecated by hand with the same kind of reason.
 */
// Each GraphQL object that shows a versioned resource (an event is also listed to storefronts).
// The refs differ in their parent types; the deprecated field reads one key of the parent.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const OBJECTS: Record<VersionedResource, any[]> = {
  Order: [Order],
  Event: [Event, ListingEventRef],
  Customer: [Customer],
  Redemption: [Redemption],
  TicketsIssued: [],
};

for (const version of API_VERSIONS) {
  for (const change of version.changes) {
    if (change.kind !== 'renamed' || !change.graphql) continue;
    const { type, nullable = false } = change.graphql;
    for (const ref of OBJECTS[change.resource]) {
      builder.objectField(ref, change.from, (t) =>
        t.field({
          type,
          nullable,
          description: `Old name of ${change.to} (API versions before ${version.date}).`,
          deprecationReason: renamedFieldReason(change, version.date),
          resolve: (parent: Record<string, unknown>) => parent[change.to] as never,
        }),
      );
    }
  }
}
