import { z } from 'zod';
import { statusOf } from '../statuses.ts';
import { instant, timeZone } from '../time-zones.ts';
import { fields as f, resource } from './resource.ts';

/** 1 to 50 characters each, at most 50 after removing duplicates (the first spelling is kept). */
const tags = z
  .array(z.string().trim().min(1, 'a tag has 1 to 50 characters').max(50, 'a tag has 1 to 50 characters'))
  .max(200, 'at most 200 tags as sent, 50 once duplicates are removed')
  .transform((list) => [...new Set(list)])
  .refine((list) => list.length <= 50, { message: 'at most 50 tags', params: { limit: 'maxItems', max: 50 } });

/**
 * The Event resource (evt_), its fields in wire order: the hand-written reads of
 * src/services/events.ts select them, `/v1` selects and answers them (rest-compat/routes/events.ts),
 * and the sales listing takes its event fields from here. A writable field carries the schema its
 * value is judged by: the create and update use cases take their input schemas and the values they
 * store from here, and the GraphQL inputs are generated from those schemas. The GraphQL type (schema/types/event.ts)
 * describes each field for admin frontends; test/platform/openapi.test.ts and test/platform/schema-sdl.test.ts hold
 * the two surfaces to the same names.
 */
export const EVENT = resource({
  id: f.text(),
  organisationId: f.text(),
  accountId: f.text(),
  name: f.writable(f.text(), z.string().trim().min(1).max(255)),
  description: f.writable(f.nullable(f.text()), z.string().max(5000).nullish()),
  status: f.writable(f.enumText(statusOf('event')), statusOf('event').optional()),
  venueId: f.writable(f.nullable(f.text()), z.string().min(1).max(100).nullish()),
  timezone: f.writable(f.text(), timeZone.nullish()),
  onSaleDate: f.writable(f.nullable(f.instant()), instant.nullish()),
  offSaleDate: f.writable(f.nullable(f.instant()), instant.nullish()),
  /** Occurrences not cancelled, and ticket types not deleted: kept on the event by triggers (migration 20261127170000_event_counts). */
  occurrenceCount: f.count((e) => `${e}."occurrenceCount"`),
  ticketCount: f.count((e) => `${e}."ticketCount"`),
  /** Products (beside admission) are not part of the service yet. */
  productCount: f.count(() => '0'),
  tags: f.writable(f.textList(), tags.optional()),
  isDeleted: f.boolean(),
  createdAt: f.instant(),
  updatedAt: f.instant(),
  createdBy: f.nullable(f.text()),
});

/** What event.created carries (docs/spec/service-spec.md §6). */
export const eventPayload = EVENT.view(['id', 'name', 'status', 'accountId', 'venueId', 'timezone', 'createdAt']);

export type EventView = Parameters<typeof eventPayload>[0];
