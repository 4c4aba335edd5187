import { z } from 'zod';
import { statusOf } from '../statuses.ts';
import { fields as f, resource } from './resource.ts';

/**
 * The EventOccurrence resource (eoc_), its fields in the order `/v1` answers them
 * (rest-compat/routes/events.ts selects and shapes them from here). Dates and times of day are
 * wall-clock values the use case derives from the stored instants and the zone
 * (src/services/occurrences.ts, `occurrenceTimes`); the GraphQL type (schema/types/occurrence.ts)
 * describes each field and adds the instants.
 */
export const OCCURRENCE = resource({
  id: f.text(),
  organisationId: f.text(),
  accountId: f.text(),
  eventId: f.text(),
  startDate: f.derived(z.string()),
  startTime: f.derived(z.string()),
  endDate: f.nullable(f.derived(z.string())),
  endTime: f.nullable(f.derived(z.string())),
  timezone: f.text(),
  status: f.enumText(statusOf('occurrence')),
  capacity: f.nullable(f.int()),
});
