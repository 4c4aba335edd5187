import { z } from 'zod';
import { createAccountInput, updateAccountInput } from '../../src/services/accounts.ts';
import { listQuery } from '../../src/pagination.ts';
import type { RestRoute } from '../route.ts';
import { deleted, deletion, idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { statusOf } from '../../src/statuses.ts';

export const ACCOUNT_FIELDS = 'id organisationId name status isDeleted createdAt updatedAt';

export const account = z.object({
  id: z.string(),
  organisationId: z.string(),
  name: z.string(),
  status: statusOf('account'),
  isDeleted: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const accountsRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/accounts',
    summary: 'List the accounts the caller may read (deleted accounts never appear).',
    tag: 'Accounts',
    organisation: true,
    operation: `query Accounts($page: Int, $limit: Int) { accounts(page: $page, limit: $limit) { nodes { ${ACCOUNT_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => ({ accounts: data.accounts.nodes, pagination: data.accounts.pagination }),
    response: z.object({ accounts: z.array(account), pagination }),
  },
  {
    method: 'POST',
    path: '/accounts',
    summary: 'Create an account.',
    tag: 'Accounts',
    organisation: true,
    operation: `mutation CreateAccount($input: CreateAccountInput!) { createAccount(input: $input) { account { ${ACCOUNT_FIELDS} } } }`,
    body: createAccountInput,
    bind: { input: 'body' },
    result: (data) => ({ account: data.createAccount.account }),
    status: 201,
    response: z.object({ account }),
  },
  {
    method: 'GET',
    path: '/accounts/{id}',
    summary: 'Get an account.',
    tag: 'Accounts',
    organisation: true,
    operation: `query Account($id: ID!) { account(id: $id) { ${ACCOUNT_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ account: data.account }),
    response: z.object({ account }),
  },
  {
    method: 'PATCH',
    path: '/accounts/{id}',
    summary: 'Rename an account or change its status.',
    tag: 'Accounts',
    organisation: true,
    operation: `mutation UpdateAccount($id: ID!, $input: UpdateAccountInput!) { updateAccount(id: $id, input: $input) { account { ${ACCOUNT_FIELDS} } } }`,
    params: idParam,
    body: updateAccountInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ account: data.updateAccount.account }),
    response: z.object({ account }),
  },
  {
    method: 'DELETE',
    path: '/accounts/{id}',
    summary: 'Delete an account (it disappears from lists and cannot own new things).',
    tag: 'Accounts',
    organisation: true,
    operation: `mutation DeleteAccount($id: ID!) { deleteAccount(id: $id) { deletedId } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => deletion(data.deleteAccount),
    response: deleted,
  },
];
