import type { ExecutionArgs } from 'graphql';

/**
 * Envelop types its hooks' arguments for any GraphQL implementation (`schema: any`,
 * `document: any`); ours is graphql-js, so they are graphql-js's ExecutionArgs. One cast, here,
 * instead of an unchecked `any` in every plugin.
 */
export function graphqlArgs(args: object): ExecutionArgs {
  return args as ExecutionArgs;
}
