import type { SalesCounters as Counters } from '../../src/services/sales-counters.ts';
import { builder } from '../builder.ts';

/** Tickets and where they are, for admin screens (src/services/sales-counters.ts). */
export const SalesCounters = builder.objectRef<Counters>('SalesCounters').implement({
  description:
    'Tickets of an event, an occurrence or a ticket type, from the inventory the sales path keeps: cancelled occurrences and deleted ticket types left out.',
  fields: (t) => ({
    capacity: t.exposeInt('capacity', {
      nullable: true,
      description:
        "Tickets there are: per ticket type and occurrence, the occurrence's capacity when set, else the ticket type's; null when any is unlimited.",
    }),
    sold: t.exposeInt('sold', { description: 'Tickets of confirmed orders.' }),
    held: t.exposeInt('held', { description: 'Tickets held by pending orders until they are paid or their hold runs out.' }),
    available: t.exposeInt('available', {
      nullable: true,
      description: 'Tickets that can still be bought: capacity less sold and held; null when unlimited.',
    }),
  }),
});
