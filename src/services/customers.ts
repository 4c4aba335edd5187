import { z } from 'zod';
import { mintKey, sha256 } from '../auth/keys.ts';
import { channelOf, customerOf, type RequestContext } from '../context.ts';
import { personContaining } from '../db/text-search.ts';
import { AppError } from '../errors.ts';
import type { Customer, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { clientBucket, type ThrottleSubject } from '../limits/rate-limiter.ts';
import {
  changedSince,
  NEWEST_FIRST,
  paginate,
  paginationOf,
  pollFilter,
  sortDirection,
  type ListOrder,
  type RawPageArgs,
} from '../pagination.ts';
import { type Raw } from '../validation.ts';
import { authorised, readableAccounts } from './access.ts';
import { channelOfKey } from './listings.ts';
import { reference, validate } from '../validation.ts';
import { statusOf } from '../statuses.ts';

/**
 * Customers (cus_) of an account: created by their first checkout (customer.created), one per
 * (account, email). Management reads them with `customers.read`. On the sales API a customer signs
 * in by magic link: a single-use code (stored as its sha256, MAGIC_LINK_TTL; a newer one retires
 * the older) mailed to an address the account knows, exchanged for a customer token (a JWT, CUSTOMER_TOKEN_TTL) that reads that
 * customer's orders and passes and nothing else.
 */

const RESOURCE = 'customers';
/** At most this many codes per address per MAGIC_LINK_TTL; further requests still answer 202 and send nothing. */
const MAX_CODES_PER_WINDOW = 5;
/** Magic-link requests per minute per publishable key and client address (IPv6: per /64). */
const MAGIC_LINKS_PER_MINUTE = 10;

export const listCustomersFilters = z.object({
  email: z.string().trim().min(1).max(254).nullish(),
  accountId: reference.nullish(),
});

/** How the graph's `customers(orderBy:)` sorts: by creation (newest first, the list's own order) or by email (A first). */
export const customerOrderInput = z.strictObject({ field: z.enum(['created_at', 'email']), direction: sortDirection.nullish() });

/** What the graph adds to GET /v1/customers' filters. */
const adminCustomerArgs = pollFilter.extend({
  orderBy: customerOrderInput.nullish(),
  search: z.string().trim().min(1).max(200).nullish(),
});

/** The order of a list of customers: creation, newest first, keeps the list's plain cursors; another names itself in its cursors. */
function customerOrder(input: z.output<typeof customerOrderInput> | null | undefined): ListOrder {
  const field = input?.field ?? 'created_at';
  const direction = input?.direction ?? (field === 'created_at' ? 'desc' : 'asc');
  if (field === 'created_at' && direction === 'desc') return { name: null, sort: NEWEST_FIRST };
  const column = field === 'created_at' ? 'createdAt' : 'email';
  return {
    name: `${field}:${direction}`,
    sort: [
      [column, direction],
      ['id', direction],
    ],
  };
}

export async function listCustomers(
  ctx: RequestContext,
  args: RawPageArgs & Raw<z.input<typeof listCustomersFilters>> & Raw<z.input<typeof adminCustomerArgs>>,
) {
  const { page, limit, first, after, last, before, updatedSince, orderBy, search, ...rawFilters } = args;
  const filters = validate(listCustomersFilters, rawFilters);
  const adminArgs = validate(adminCustomerArgs, { updatedSince, orderBy, search });
  const accountId = readableAccounts(ctx, RESOURCE, filters.accountId);
  const where: Prisma.CustomerWhereInput = {
    account: { isDeleted: false },
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.email ? { email: filters.email.toLowerCase() } : {}),
    ...(adminArgs.search ? { OR: personContaining(adminArgs.search) } : {}),
    ...changedSince(updatedSince),
  };
  return paginate(
    { page, limit, first, after, last, before },
    customerOrder(adminArgs.orderBy),
    (keyset) => ctx.db.customer.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.customer.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

export async function getCustomer(ctx: RequestContext, id: string): Promise<Customer> {
  // Reading is the only right on customers: one the caller may not read does not exist for them.
  return authorised(ctx, await ctx.db.customer.findFirst({ where: { id, account: { isDeleted: false } } }), RESOURCE, 'read', 'Customer');
}

export const magicLinkInput = z.strictObject({
  email: z
    .email()
    .max(254)
    .transform((email) => email.toLowerCase()),
});
export const customerTokenInput = z.strictObject({ code: z.string().trim().min(1).max(200) });

/**
 * Starts a magic-link sign-in. Always answers the same (202), whether the address is a customer
 * of the channel's account or not, and sends the mail after answering, so neither the answer nor
 * its timing tells who is a customer.
 */
export async function requestMagicLink(ctx: RequestContext, raw: Raw<z.input<typeof magicLinkInput>>): Promise<{ accepted: true }> {
  const { email } = validate(magicLinkInput, raw);
  const principal = channelOf(ctx);
  const { runtime } = ctx;
  // Per publishable key and address, whatever the email: the limit itself tells nothing about who
  // is a customer. A secret key is a server signing in its many users from one address.
  if (principal.keyKind === 'publishable') {
    await runtime.rateLimiter.take('magic-link', `${principal.channelKeyId}|${clientBucket(ctx.clientIp)}`, MAGIC_LINKS_PER_MINUTE, 60_000);
  }
  const send = async () => {
    const [customer, { channel }] = await Promise.all([
      ctx.db.customer.findFirst({ where: { accountId: principal.accountId, email } }),
      channelOfKey(ctx),
    ]);
    if (!customer) return;
    const ttl = runtime.config.MAGIC_LINK_TTL;
    const { key: code, keyHash: codeHash } = mintKey('', 24);
    const expiresAt = new Date(Date.now() + ttl);
    const issued = await ctx.db.$transaction(async (tx) => {
      // One issuer per address at a time, so the cap holds under concurrent requests.
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`magic-link:${customer.accountId}:${email}`}))`;
      const now = new Date();
      const recent = await tx.customerLoginCode.count({
        where: { accountId: customer.accountId, email, createdAt: { gt: new Date(now.getTime() - ttl) } },
      });
      if (recent >= MAX_CODES_PER_WINDOW) return false;
      // Only the newest code works: an older mail lying around no longer signs anyone in.
      await tx.customerLoginCode.updateMany({
        where: { accountId: customer.accountId, email, usedAt: null, expiresAt: { gt: now } },
        data: { expiresAt: now },
      });
      await tx.customerLoginCode.create({
        data: {
          id: newId('customerLoginCode'),
          organisationId: customer.organisationId,
          accountId: customer.accountId,
          email,
          codeHash,
          expiresAt,
        },
      });
      return true;
    });
    if (!issued) return;
    let link: string | null = null;
    if (channel.storefrontUrl) {
      const url = new URL(channel.storefrontUrl);
      url.searchParams.set('code', code);
      link = url.toString();
    }
    await runtime.mailer.send({
      to: email,
      subject: `Sign in to ${channel.name}`,
      text: [
        `Here is your sign-in ${link ? 'link' : 'code'} for ${channel.name}.`,
        '',
        ...(link ? [link, '', `Or enter this code: ${code}`] : [code]),
        '',
        `It works once and expires at ${expiresAt.toISOString()}.`,
        'If you did not ask to sign in, ignore this message.',
      ].join('\n'),
      meta: { kind: 'customer_magic_link', customerId: customer.id, code, link },
    });
  };
  void send().catch((error: unknown) => ctx.logger.error({ err: error }, 'magic-link mail failed'));
  return { accepted: true };
}

/** Failed code exchanges per client address before each further one must wait (growing delays). */
const CODE_FAILURES_FREE = 10;

/**
 * Exchanges a magic-link code (once, before it expires) for a customer token. Unknown, used and
 * expired codes are throttled per client address, so codes cannot be guessed at speed.
 */
export async function createCustomerToken(ctx: RequestContext, raw: Raw<z.input<typeof customerTokenInput>>) {
  const { code } = validate(customerTokenInput, raw);
  const principal = channelOf(ctx);
  const { throttle } = ctx.runtime;
  const address: ThrottleSubject = { limit: 'customer-code:address', subject: clientBucket(ctx.clientIp), free: CODE_FAILURES_FREE };
  await throttle.assertAllowed([address]);
  const refuse = async (error: AppError): Promise<never> => {
    await throttle.fail([address]);
    throw error;
  };
  const login = await ctx.db.customerLoginCode.findFirst({ where: { codeHash: sha256(code), accountId: principal.accountId } });
  if (!login) return refuse(new AppError('UNAUTHENTICATED', 'Unknown sign-in code.'));
  if (login.usedAt) return refuse(new AppError('CONFLICT', 'This sign-in code was used already; request a new link.'));
  if (login.expiresAt <= new Date()) return refuse(new AppError('GONE', 'This sign-in code has expired; request a new link.'));
  const used = await ctx.db.customerLoginCode.updateMany({ where: { id: login.id, usedAt: null }, data: { usedAt: new Date() } });
  if (used.count !== 1) throw new AppError('CONFLICT', 'This sign-in code was used already; request a new link.');
  const customer = await ctx.db.customer.findFirst({ where: { accountId: login.accountId, email: login.email } });
  if (!customer) throw new AppError('UNAUTHENTICATED', 'Unknown sign-in code.');
  const { token, expiresAt } = await ctx.runtime.tokens.signCustomer(customer, ctx.runtime.config.CUSTOMER_TOKEN_TTL);
  return { customerToken: token, expiresAt, customer };
}

export const customerOrdersFilters = z.object({ status: statusOf('order').nullish() });

/** The signed-in customer's orders, newest first (GET /live/sales/me/orders). */
export async function customerOrders(ctx: RequestContext, args: RawPageArgs & { status?: unknown }) {
  const { customerId } = customerOf(ctx);
  const { page, limit, first, after, last, before, ...rest } = args;
  const { status } = validate(customerOrdersFilters, rest);
  const where: Prisma.OrderWhereInput = { customerId, ...(status ? { status } : {}) };
  const [customer, page_] = await Promise.all([
    ctx.db.customer.findFirstOrThrow({ where: { id: customerId } }),
    paginate(
      { page, limit, first, after, last, before },
      NEWEST_FIRST,
      (keyset) => ctx.db.order.count({ where: { AND: [where, keyset] } }),
      ({ where: keyset, orderBy, skip, take }) => ctx.db.order.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
    ),
  ]);
  return { customer, orders: page_.nodes, pagination: await paginationOf(page_) };
}
