import { z } from 'zod';

/** Shared pieces of the REST shapes: the pagination answer, id parameters. (Page queries: src/pagination.ts.) */
export const pagination = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  totalPages: z.number().int(),
  hasNext: z.boolean(),
  hasPrev: z.boolean(),
});

export const PAGINATION_FIELDS = 'pagination { page limit total totalPages hasNext hasPrev }';

export const idParam = z.object({ id: z.string().min(1).max(100) });

export const deleted = z.object({ success: z.boolean(), id: z.string() });

/** The contract's deletion answer from a delete mutation's payload (`{ deletedId }`). */
export const deletion = (answer: { deletedId: string }) => ({ success: true, id: answer.deletedId });
