import { z } from 'zod';
import { reference } from '../../validation.ts';

/**
 * The lines a storefront gives a cart, when it creates one or replaces its lines: at most
 * MAX_LINES, at most MAX_QUANTITY tickets each, each occurrence and ticket type once.
 */

const MAX_LINES = 50;
const MAX_QUANTITY = 100;

/** One line: a quantity of one ticket type for one occurrence. */
export const itemInput = z.strictObject({
  occurrenceId: reference,
  ticketTypeId: reference,
  quantity: z.number().int().min(1).max(MAX_QUANTITY),
});
export const itemsInput = z
  .array(itemInput)
  .max(MAX_LINES)
  .superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const key = `${item.occurrenceId}|${item.ticketTypeId}`;
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: 'The same occurrence and ticket type twice; give one line with the total quantity.',
        });
      seen.add(key);
    });
  });

export type CartItemInput = z.input<typeof itemInput>;
