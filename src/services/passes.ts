import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { Pass, Prisma, Redemption } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { views } from '../webhooks/payloads.ts';
import { withWebhooks } from '../webhooks/record.ts';
import { changedSince, OLDEST_FIRST, type PolledListArgs, paginate } from '../pagination.ts';
import { type Raw } from '../validation.ts';
import { authorised, readableAccounts } from './access.ts';
import { reference, validate } from '../validation.ts';
import { statusOf } from '../statuses.ts';

/**
 * Passes (pas_, one per ticket of a confirmed order) and their redemption at the door. A scanner
 * redeems a pass by id or by its printed code (optionally saying which occurrence it admits to,
 * so a pass for another show, or for a cancelled one, is refused): the pass's entitlement (ent_) gets its one
 * redemption (red_); ticket.redeemed. The redemption row is unique per entitlement, so two
 * scanners reading the same pass at the same instant admit it once; the other is told when it was
 * redeemed. A void pass (its order cancelled or refunded) is refused.
 *
 * Rights: `passes.read`; `passes.redeem`, on the pass's account.
 */

const RESOURCE = 'passes';

export const listPassesFilters = z.object({
  orderId: reference.nullish(),
  customerId: reference.nullish(),
  occurrenceId: reference.nullish(),
  status: statusOf('pass').nullish(),
  accountId: reference.nullish(),
});

export async function listPasses(ctx: RequestContext, args: PolledListArgs & Raw<z.input<typeof listPassesFilters>>) {
  const { page, limit, first, after, last, before, updatedSince, ...rawFilters } = args;
  const filters = validate(listPassesFilters, rawFilters);
  const accountId = readableAccounts(ctx, RESOURCE, filters.accountId);
  const where: Prisma.PassWhereInput = {
    order: { account: { isDeleted: false } },
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.orderId ? { orderId: filters.orderId } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
    ...(filters.occurrenceId ? { occurrenceId: filters.occurrenceId } : {}),
    ...(filters.status ? { status: filters.status } : {}),
    ...changedSince(updatedSince),
  };
  return paginate(
    { page, limit, first, after, last, before },
    OLDEST_FIRST,
    (keyset) => ctx.db.pass.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.pass.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

async function loadPass(ctx: RequestContext, where: Prisma.PassWhereInput, action: 'read' | 'redeem'): Promise<Pass> {
  return authorised(
    ctx,
    await ctx.db.pass.findFirst({ where: { ...where, order: { account: { isDeleted: false } } } }),
    RESOURCE,
    action,
    'Pass',
  );
}

export function getPass(ctx: RequestContext, id: string): Promise<Pass> {
  return loadPass(ctx, { id }, 'read');
}

const passCode = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .transform((code) => code.toUpperCase().replace(/[\s-]/g, ''));
/** Where the scanner stands: a pass for another occurrence is refused. */
const scannerOccurrence = reference.nullish();

/** The bodies of POST /v1/passes/{id}/redeem and POST /v1/redemptions: the same fields as below. */
export const redeemPassByIdBody = z.strictObject({ occurrenceId: scannerOccurrence });
export const redeemPassByCodeBody = z.strictObject({ code: passCode, occurrenceId: scannerOccurrence });

export const redeemPassInput = z
  .strictObject({
    passId: reference.nullish(),
    code: passCode.nullish(),
    occurrenceId: scannerOccurrence,
  })
  .refine((input) => (input.passId == null) !== (input.code == null), { message: 'Give passId or code, not both.', path: ['code'] });

/**
 * Why a door refuses a pass, for a scanner to show without reading the message: each 409 of
 * redeemPass carries one as `details[0].reason` (the graph's `RedeemPassPayload.refusal`).
 */
export const PASS_REFUSALS = ['already_redeemed', 'void', 'other_occurrence', 'occurrence_cancelled', 'no_entry'] as const;
export type PassRefusal = (typeof PASS_REFUSALS)[number];

function refused(reason: PassRefusal, message: string, detail: Record<string, unknown> = {}): AppError {
  return new AppError('CONFLICT', message, [{ path: 'pass', message: reason.replaceAll('_', ' '), reason, ...detail }]);
}

function alreadyRedeemed(redemption: Pick<Redemption, 'id' | 'createdAt'>): AppError {
  return refused('already_redeemed', `This pass was already redeemed at ${redemption.createdAt.toISOString()}.`, {
    redemptionId: redemption.id,
    redeemedAt: redemption.createdAt.toISOString(),
  });
}

/** Redeems a pass by id (POST /v1/passes/{id}/redeem) or code (POST /v1/redemptions). */
export async function redeemPass(
  ctx: RequestContext,
  raw: { passId?: unknown; code?: unknown; occurrenceId?: unknown },
): Promise<Redemption> {
  const input = validate(redeemPassInput, raw);
  const pass = await loadPass(ctx, input.passId ? { id: input.passId } : { code: input.code! }, 'redeem');
  if (input.occurrenceId && input.occurrenceId !== pass.occurrenceId) {
    throw new AppError('CONFLICT', `This pass is for another occurrence (${pass.occurrenceId}).`, [
      { path: 'occurrenceId', message: 'not the occurrence of this pass', reason: 'other_occurrence', passOccurrenceId: pass.occurrenceId },
    ]);
  }
  const occurrence = await ctx.db.eventOccurrence.findFirst({ where: { id: pass.occurrenceId }, select: { status: true } });
  if (occurrence?.status === 'cancelled')
    throw refused('occurrence_cancelled', 'The occurrence of this pass was cancelled; it admits no one.');
  const redeemedById = ctx.principal?.kind === 'staff' ? ctx.principal.userId : null;
  try {
    return await withWebhooks(ctx.db, ctx.runtime.dispatcher, async (tx, webhooks) => {
      const entitlement = await tx.entitlement.findFirst({ where: { passId: pass.id }, include: { redemption: true } });
      if (!entitlement) throw refused('no_entry', 'This pass grants no entry.');
      if (entitlement.redemption) throw alreadyRedeemed(entitlement.redemption);
      const moved = await tx.pass.updateMany({ where: { id: pass.id, status: 'issued' }, data: { status: 'redeemed' } });
      if (moved.count !== 1) {
        const current = await tx.pass.findFirstOrThrow({ where: { id: pass.id } });
        if (current.status === 'void') throw refused('void', 'This pass is void: its order was cancelled or refunded.');
        const other = await tx.redemption.findFirst({ where: { passId: pass.id } });
        throw other ? alreadyRedeemed(other) : refused('already_redeemed', 'This pass was already redeemed.');
      }
      const redemption = await tx.redemption.create({
        data: {
          id: newId('redemption'),
          organisationId: pass.organisationId,
          accountId: pass.accountId,
          passId: pass.id,
          entitlementId: entitlement.id,
          redeemedById,
        },
      });
      await webhooks.record({
        organisationId: pass.organisationId,
        accountId: pass.accountId,
        type: 'ticket.redeemed',
        payload: views.ticketRedeemed({
          redemptionId: redemption.id,
          passId: pass.id,
          orderId: pass.orderId,
          entitlementId: entitlement.id,
          accountId: pass.accountId,
        }),
      });
      return redemption;
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // The other scanner's redemption committed between our read and our insert.
    const existing = await ctx.db.redemption.findFirst({ where: { passId: pass.id } });
    throw existing ? alreadyRedeemed(existing) : error;
  }
}
