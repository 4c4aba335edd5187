import {
  getNamedType,
  getOperationAST,
  GraphQLError,
  isAbstractType,
  isCompositeType,
  Kind,
  OperationTypeNode,
  print,
  type ExecutionResult,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { RequestContext } from '../context.ts';
import { AppError, FaultAfterWork, toAppError } from '../errors.ts';
import { commitsSoFar } from '../db/client.ts';
import { canonical, onceForKey, type AnswerReplay, type KeyedRun } from '../http/idempotency.ts';
import { graphqlArgs } from './execution-args.ts';
import { fragmentsOf } from './variables.ts';

/**
 * How /graphql keeps a mutation's answer under an Idempotency-Key: the route tables of /v1 and
 * /live say it for the same root fields (rest-compat/mutation-replay.ts), so a retry is answered
 * alike on every surface.
 */
export interface MutationReplay {
  /** Root fields whose answer carries a token pair: never kept, every request runs. */
  never: ReadonlySet<string>;
  /** Fields holding key material (`Type.field`): a kept answer is kept without them, and a retry refused. */
  secretFields: ReadonlySet<string>;
}

export interface KeyedMutationsOptions extends MutationReplay {
  /** Why the caller may not run a root mutation field: judged before the key, as /v1 judges a route's caller. */
  refusal(field: string, ctx: RequestContext): Promise<AppError | null>;
}

/** The answer a retry of a mutation that made a secret is refused with, beside what was made. */
const READ_WITH =
  'Read what was made with a query (its answer without the secret is in details.created); a secret that was lost is not shown again: rotate it, or revoke what holds it and make another.';

/**
 * Idempotency-Key on /graphql, for mutations: the same key from the same caller with the same
 * operation (document, operation name and variables) within 24 hours answers the first result again,
 * with `Idempotent-Replayed: true`, and the work is done once; everything else is as on /v1
 * (src/http/idempotency.ts: the namespace, the 409s, faults given back, faults after work kept,
 * quotas). A query with a key runs every time: a read changes nothing. Yoga still answers the HTTP
 * request (CORS, media type, status), the first time and on replay.
 *
 * Only Yoga's requests carry a key here: /v1 and /live keep theirs per route
 * (rest-compat/executor.ts) and run their operations without Yoga's `request`.
 */
export function keyedMutations(options: KeyedMutationsOptions, mask: (error: unknown) => GraphQLError): Plugin<RequestContext> {
  return {
    onExecute({ args: envelopArgs, executeFn, setExecuteFn }) {
      const args = graphqlArgs(envelopArgs);
      const key = keyHeaders(args.contextValue as KeyedContext);
      if (key === undefined) return;
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== OperationTypeNode.MUTATION) return;
      const ctx = args.contextValue as RequestContext;
      const fragments = fragmentsOf(args.document);
      const schema = args.schema;
      setExecuteFn(async (executeArgs) => {
        const execute = async () => (await executeFn(executeArgs)) as ExecutionResult;
        const run = async (): Promise<KeyedRun<ExecutionResult>> => {
          const commitsBefore = commitsSoFar();
          const result = await execute();
          const errors = result.errors ?? [];
          const masked = errors.length > 0 ? { ...result, errors: errors.map(mask) } : result;
          return {
            value: masked,
            answer: { status: 200, body: JSON.parse(JSON.stringify(masked)), headers: {} },
            failure: failureOf(errors, commitsSoFar() > commitsBefore),
          };
        };
        const fields = rootFields(operation.selectionSet, fragments);
        // A keyed document runs whole or not at all as far as rights go: with one root field the
        // caller may not run, the others would take effect unkept and a retry would do them again.
        for (const field of fields) {
          const refused = await options.refusal(field, ctx);
          if (refused) return fields.length === 1 ? execute() : { errors: [new GraphQLError(refused.message, { originalError: refused })] };
        }
        const signIns = fields.filter((field) => options.never.has(field));
        if (signIns.length > 0 && signIns.length < fields.length) {
          const refused = AppError.validation([
            {
              path: 'Idempotency-Key',
              message: `A sign-in (${signIns.join(', ')}) is never kept, so it cannot share a kept document with other mutations: send it in a request of its own.`,
            },
          ]);
          return { errors: [new GraphQLError(refused.message, { originalError: refused })] };
        }
        // Sign-ins alone keep nothing, as their routes: the key is judged, then every request runs.
        const replay: AnswerReplay =
          signIns.length > 0
            ? 'never'
            : {
                secrets: (body) => withoutSecrets(body, operation.selectionSet, schema, fragments, options.secretFields),
                readWith: () => READ_WITH,
              };
        const config = ctx.runtime.config;
        const request = `POST /graphql\u0000${canonical({ document: print(args.document), operationName: args.operationName ?? null, variables: args.variableValues ?? {} })}`;
        try {
          const outcome = await onceForKey(
            ctx.runtime.db,
            ctx,
            key,
            request,
            {
              replay,
              claimTimeoutMs: config.IDEMPOTENCY_CLAIM_TIMEOUT,
              keysPerCredential: config.IDEMPOTENCY_KEYS_PER_CREDENTIAL,
              keysPerAddress: config.IDEMPOTENCY_KEYS_PER_ADDRESS,
            },
            run,
          );
          if ('ran' in outcome) return outcome.ran.value;
          ctx.setResponseHeader('Idempotent-Replayed', 'true');
          return resultOf(outcome.replayed.body);
        } catch (error) {
          if (error instanceof AppError) return { errors: [new GraphQLError(error.message, { originalError: error })] };
          throw error;
        }
      });
    },
  };
}

interface KeyedContext {
  /** Node's request, whose headers keep repeated values apart. */
  req?: { headersDistinct?: Record<string, string[] | undefined> };
  request?: globalThis.Request;
}

/** The Idempotency-Key header values as sent (several stay several, for onceForKey to refuse). */
function keyHeaders(context: KeyedContext): string[] | undefined {
  const distinct = context.req?.headersDistinct;
  if (distinct) return distinct['idempotency-key'];
  const joined = context.request?.headers.get('idempotency-key');
  return joined === null || joined === undefined ? undefined : [joined];
}

/**
 * What a result's errors mean for its key: a throttle or a fault that did nothing (the key is given
 * back), else a fault after work, else the first refusal; none for a result without errors. When
 * one of the document's mutations committed, nothing is given back: whatever failed after it came
 * after work a retry must not do again.
 */
function failureOf(errors: readonly GraphQLError[], committed: boolean): AppError | undefined {
  const failures = errors.map(toAppError);
  // Whatever failed after a commit came after work: kept, never given back (a public caller's
  // refusals are given back otherwise, src/http/idempotency.ts).
  if (committed && failures.length > 0) return new FaultAfterWork();
  const didNothing = failures.find((failure) => !(failure instanceof FaultAfterWork) && (failure.status === 429 || failure.status >= 500));
  return didNothing ?? failures.find((failure) => failure instanceof FaultAfterWork) ?? failures[0];
}

/** A kept result as a result again: its errors as GraphQL errors with their path and extensions. */
function resultOf(body: unknown): ExecutionResult {
  const { data, errors, extensions } = body as {
    data?: Record<string, unknown> | null;
    errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[];
    extensions?: Record<string, unknown>;
  };
  return {
    ...(data === undefined ? {} : { data }),
    ...(errors
      ? { errors: errors.map((error) => new GraphQLError(error.message, { path: error.path, extensions: error.extensions })) }
      : {}),
    ...(extensions ? { extensions } : {}),
  };
}

/** The root fields an operation selects, through its fragments. */
function rootFields(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, seen = new Set<string>()): string[] {
  return selectionSet.selections.flatMap((selection) => {
    if (selection.kind === Kind.FIELD) return selection.name.value === '__typename' ? [] : [selection.name.value];
    if (selection.kind === Kind.INLINE_FRAGMENT) return rootFields(selection.selectionSet, fragments, seen);
    const fragment = fragments.get(selection.name.value);
    if (!fragment || seen.has(fragment.name.value)) return [];
    seen.add(fragment.name.value);
    return rootFields(fragment.selectionSet, fragments, seen);
  });
}

/**
 * A result's JSON without the values of secret fields wherever the operation selected them (under
 * any alias, through fragments, for every type an abstract field may be); undefined when it held
 * none.
 */
function withoutSecrets(
  body: unknown,
  selectionSet: SelectionSetNode,
  schema: GraphQLSchema,
  fragments: Map<string, FragmentDefinitionNode>,
  secretFields: ReadonlySet<string>,
): unknown {
  const copy = structuredClone(body) as { data?: unknown };
  let found = false;
  const isSecret = (type: GraphQLCompositeType, field: string) =>
    secretFields.has(`${type.name}.${field}`) ||
    (isAbstractType(type) && schema.getPossibleTypes(type).some((possible) => secretFields.has(`${possible.name}.${field}`)));
  const walk = (value: unknown, selections: SelectionSetNode, type: GraphQLCompositeType): void => {
    if (Array.isArray(value)) return value.forEach((item) => walk(item, selections, type));
    if (typeof value !== 'object' || value === null) return;
    const object = value as Record<string, unknown>;
    for (const selection of selections.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        const responseKey = selection.alias?.value ?? name;
        if (!(responseKey in object)) continue;
        if (isSecret(type, name)) {
          delete object[responseKey];
          found = true;
          continue;
        }
        const fieldType = 'getFields' in type ? type.getFields()[name]?.type : undefined;
        const named = fieldType && getNamedType(fieldType);
        if (selection.selectionSet && named && isCompositeType(named)) walk(object[responseKey], selection.selectionSet, named);
        continue;
      }
      const fragment = selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
      if (!fragment) continue;
      const condition = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : type;
      if (condition && isCompositeType(condition)) walk(object, fragment.selectionSet, condition);
    }
  };
  walk(copy.data, selectionSet, schema.getMutationType()!);
  return found ? copy : undefined;
}
