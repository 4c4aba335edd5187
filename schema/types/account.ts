import {
  createAccount,
  createAccountInput,
  deleteAccount,
  getAccount,
  listAccounts,
  updateAccount,
  updateAccountInput,
} from '../../src/services/accounts.ts';
import type { RequestContext } from '../../src/context.ts';
import { related } from '../../src/services/related.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { inputFrom } from '../input.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { describeEnumStatuses, statusEnum } from './common.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';

const AccountStatus = statusEnum('AccountStatus', 'account', 'Whether an account trades.', {
  active: 'Trading.',
  inactive: 'Not trading.',
});

export const Account = builder.prismaObject('Account', {
  interfaces: [Node],
  description: 'A sub-unit of an organisation that owns events, channels and customers.',
  // Those who manage role assignments on an account see the account they assign on.
  authScopes: (account, ctx) =>
    ctx.access.allows('accounts', 'read', account.id) ||
    ctx.access.allows('accounts', 'write', account.id) ||
    ctx.access.allows('role_assignments', 'read', account.id) ||
    ctx.access.allows('role_assignments', 'write', account.id),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    status: t.field({ type: AccountStatus, description: `${describeEnumStatuses('account')}.`, resolve: (a) => a.status }),
    isDeleted: t.exposeBoolean('isDeleted', { description: 'Whether the account was deleted.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const AccountConnection = pagedConnection(Account, 'AccountConnection', 'accounts');

const CreateAccountInput = inputFrom('CreateAccountInput', createAccountInput, {
  description: 'A new account.',
  fields: {
    name: '1 to 255 characters.',
    status: 'Default ACTIVE.',
  },
});

const UpdateAccountInput = inputFrom('UpdateAccountInput', updateAccountInput, {
  description: 'Changes to an account; omitted fields stay.',
  fields: {
    name: '1 to 255 characters.',
    status: `${describeEnumStatuses('account')}.`,
  },
});

/**
 * The `account` beside a row's `accountId`: batched (src/services/related.ts) and shown under
 * Account's rule, so a caller who may not read the account gets null with the refusal at its path.
 */
export function accountRelation(description = 'Its account (null, with an error, where you may not read accounts).') {
  return {
    type: Account,
    nullable: true,
    description,
    resolve: (row: { accountId: string | null }, _args: unknown, ctx: RequestContext) => related(ctx, 'account', row.accountId),
  } as const;
}

builder.queryFields((t) => ({
  accounts: t.field({
    type: AccountConnection,
    nullable: true,
    description: 'Accounts the caller may read, oldest first; deleted ones never appear (GET /v1/accounts).',
    authScopes: { $all: { organisation: true, permission: 'accounts.read' } },
    args: {
      ...t.arg.connectionArgs(),
      ...pageArgsFor(t),
      updatedSince: updatedSinceArg(t, 'accounts created or changed (renamed, suspended, reactivated)'),
    },
    resolve: (_root, args, ctx) => listAccounts(ctx, args),
  }),
  account: t.field({
    type: Account,
    nullable: true,
    description: 'One account (GET /v1/accounts/{id}).',
    authScopes: { $all: { organisation: true, permission: 'accounts.read' } },
    args: { id: t.arg.id({ required: true, description: 'Account id.' }) },
    resolve: (_root, { id }, ctx) => getAccount(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createAccount: t.field({
    ...payload('CreateAccount', 'account', Account, 'The account created.'),
    description: 'Creates an account (POST /v1/accounts).',
    authScopes: { $all: { organisation: true, organisationPermission: 'accounts.write' } },
    args: { input: t.arg({ type: CreateAccountInput, required: true, description: 'The account.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createAccount(ctx, input)),
  }),
  updateAccount: t.field({
    ...payload('UpdateAccount', 'account', Account, 'The account as changed.'),
    description: 'Renames or (de)activates an account (PATCH /v1/accounts/{id}).',
    authScopes: { $all: { organisation: true, permission: 'accounts.write' } },
    args: {
      id: t.arg.id({ required: true, description: 'Account id.' }),
      input: t.arg({ type: UpdateAccountInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateAccount(ctx, id, input)),
  }),
  deleteAccount: t.field({
    ...deletePayload('DeleteAccount', 'account'),
    description: 'Deletes an account: it disappears from lists and cannot own new things (DELETE /v1/accounts/{id}).',
    authScopes: { $all: { organisation: true, organisationPermission: 'accounts.write' } },
    args: { id: t.arg.id({ required: true, description: 'Account id.' }) },
    resolve: (_root, { id }, ctx) => deleted(ctx, () => deleteAccount(ctx, id)),
  }),
}));
