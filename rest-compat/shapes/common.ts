import { z } from 'zod';

/** Shared pieces of the REST shapes: query-string pagination and the pagination answer. */
export const pageQuery = {
  page: z
    .string()
    .regex(/^[1-9]\d{0,8}$/, 'an integer from 1')
    .transform(Number)
    .optional(),
  limit: z
    .string()
    .regex(/^\d+$/, 'an integer from 1 to 100')
    .transform(Number)
    .refine((n) => n >= 1 && n <= 100, 'an integer from 1 to 100')
    .optional(),
};

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
