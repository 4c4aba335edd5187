import {
  OperationTypeNode,
  getNamedType,
  GraphQLError,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  Kind,
  Lexer,
  parse,
  Source,
  TokenKind,
  type ASTVisitor,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type GraphQLOutputType,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { LIMITS, type LimitName } from '../limits/limits.ts';
import { MAX_LIMIT } from '../pagination.ts';
import { findUnsafeString, inputProblem } from '../http/input-safety.ts';
import { graphqlArgs } from './execution-args.ts';
import { variableIssues, variablesError } from './variables.ts';

/**
 * Operation limits of the GraphQL API, checked before anything executes: a document
 * of 200,000 aliases, 2,000 sign-in mutations in one request or a list nested 10,000 deep must
 * cost the server a bounded amount of work and write nothing.
 *
 * - tokens: the parser stops at LIMITS.maxTokens (graphql-js `maxTokens`), so parsing is bounded;
 * - depth, aliases, sign-in mutations, and strings PostgreSQL cannot store: one validation pass;
 * - cost: fields count 1, a list multiplies its selection by its page size (the `limit`/`first`
 *   argument, from the variables when given that way; 20 by default; 10 for a list without one),
 *   checked with the variables right before execution.
 *
 * Written here rather than taken from graphql-armor because the contract wants every refusal to
 * name its limit (`extensions.limit`, `extensions.max`) with the service's error code, and because
 * armor's cost limit does not weigh a list by the page size it asks for.
 */

/** Root mutation fields that check a credential: at most LIMITS.signInMutations per document. */
export const SIGN_IN_MUTATIONS: ReadonlySet<string> = new Set([
  'login',
  'refreshTokens',
  'logout',
  'federate',
  'redeemInvitation',
  'requestCustomerMagicLink',
  'createCustomerToken',
]);

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);
const DEFAULT_PAGE_SIZE = 20;
const DEFAULT_LIST_SIZE = 10;

/** The refusal of a limit: 400 before execution, VALIDATION_FAILED naming the limit. */
export function limitError(limit: LimitName, message: string, nodes?: readonly FieldNode[]): GraphQLError {
  return new GraphQLError(message, {
    nodes,
    // spec: false keeps the 400 for application/json too (Yoga answers spec validation errors 200 there).
    extensions: { code: 'VALIDATION_FAILED', limit, max: LIMITS[limit], http: { status: 400, spec: false } },
  });
}

/**
 * Whether `source` has more than LIMITS.maxTokens tokens, found by lexing at most that many. A
 * document cannot have more tokens than characters, so short ones are not lexed at all. A lexing
 * error answers false: the parser reports it as usual.
 */
export function exceedsTokenLimit(source: string): boolean {
  if (source.length <= LIMITS.maxTokens) return false;
  const lexer = new Lexer(new Source(source));
  try {
    for (let count = 0; count <= LIMITS.maxTokens; count += 1) {
      if (lexer.advance().kind === TokenKind.EOF) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Parses with the token limit; the refusal names it. */
export function parseBounded(source: string): DocumentNode {
  try {
    return parse(source, { maxTokens: LIMITS.maxTokens });
  } catch (error) {
    // graphql-js words it "more that N tokens".
    if (error instanceof GraphQLError && /contains more th(?:an|at) \d+ tokens/.test(error.message)) {
      throw limitError('maxTokens', `The document has more than ${LIMITS.maxTokens} tokens.`);
    }
    throw error;
  }
}

/**
 * One validation rule for depth, aliases, sign-in mutations and unsafe string literals. Fragments
 * are followed where they are spread (validation refuses fragment cycles on its own; the visited
 * set makes this rule safe even before that).
 */
export function operationLimitsRule(context: ValidationContext): ASTVisitor {
  const document = context.getDocument();
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  let aliases = 0;
  return {
    Field(node) {
      if (node.alias) aliases += 1;
      if (aliases === LIMITS.maxAliases + 1) {
        context.reportError(limitError('maxAliases', `The document uses more than ${LIMITS.maxAliases} aliases.`, [node]));
      }
    },
    StringValue(node) {
      const problem = findUnsafeString(node.value);
      if (problem) context.reportError(limitFreeError(`A string in the document ${problem}.`));
    },
    OperationDefinition(operation) {
      const depth = depthOf(operation.selectionSet, fragments, new Set());
      if (depth > LIMITS.maxDepth) {
        context.reportError(limitError('maxDepth', `The operation is nested ${depth} deep; at most ${LIMITS.maxDepth} is allowed.`));
      }
      if (operation.operation === OperationTypeNode.MUTATION) {
        const signIns = rootFields(operation.selectionSet, fragments, new Set()).filter((field) => SIGN_IN_MUTATIONS.has(field.name.value));
        if (signIns.length > LIMITS.signInMutations) {
          context.reportError(
            limitError('signInMutations', `At most ${LIMITS.signInMutations} sign-in mutation may be sent in one document.`, signIns),
          );
        }
      }
    },
  };
}

function limitFreeError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'VALIDATION_FAILED', http: { status: 400, spec: false } } });
}

function depthOf(
  selectionSet: SelectionSetNode | undefined,
  fragments: Map<string, FragmentDefinitionNode>,
  visiting: Set<string>,
): number {
  if (!selectionSet) return 0;
  let deepest = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) {
      if (INTROSPECTION_ROOTS.has(selection.name.value)) continue;
      deepest = Math.max(deepest, 1 + depthOf(selection.selectionSet, fragments, visiting));
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      deepest = Math.max(deepest, depthOf(selection.selectionSet, fragments, visiting));
    } else {
      const name = selection.name.value;
      const fragment = fragments.get(name);
      if (!fragment || visiting.has(name)) continue;
      visiting.add(name);
      deepest = Math.max(deepest, depthOf(fragment.selectionSet, fragments, visiting));
      visiting.delete(name);
    }
  }
  return deepest;
}

/** The fields selected at the top of a selection set, through fragments. */
function rootFields(selectionSet: SelectionSetNode, fragments: Map<string, FragmentDefinitionNode>, visiting: Set<string>): FieldNode[] {
  return selectionSet.selections.flatMap((selection) => {
    if (selection.kind === Kind.FIELD) return [selection];
    if (selection.kind === Kind.INLINE_FRAGMENT) return rootFields(selection.selectionSet, fragments, visiting);
    const fragment = fragments.get(selection.name.value);
    if (!fragment || visiting.has(fragment.name.value)) return [];
    visiting.add(fragment.name.value);
    return rootFields(fragment.selectionSet, fragments, visiting);
  });
}

// ---------------------------------------------------------------------------------------------
// Cost

function isListOutput(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

/** A Relay connection: its `nodes` and `edges` are the page. */
export function isConnection(type: GraphQLNamedType): boolean {
  return isObjectType(type) && 'edges' in type.getFields() && 'pageInfo' in type.getFields();
}

function argumentNumber(field: FieldNode, names: readonly string[], variables: Record<string, unknown>): number | undefined {
  for (const name of names) {
    const argument = field.arguments?.find((a) => a.name.value === name);
    if (!argument) continue;
    const value = valueOf(argument.value, variables);
    // A page larger than any list serves is the list's use case to refuse, naming the argument
    // (`query.limit` on /v1); the cost counts the largest page that could be served.
    if (typeof value === 'number' && Number.isFinite(value)) return Math.min(MAX_LIMIT, Math.max(0, value));
  }
  return undefined;
}

/** A list asked by ids (`nodes(ids:)`) is as long as the ids, up to the largest page. */
function idCount(field: FieldNode, variables: Record<string, unknown>): number | undefined {
  const argument = field.arguments?.find((a) => a.name.value === 'ids');
  if (!argument) return undefined;
  const value = argument.value.kind === Kind.LIST ? argument.value.values : valueOf(argument.value, variables);
  return Array.isArray(value) ? Math.min(MAX_LIMIT, value.length) : undefined;
}

function valueOf(node: ValueNode, variables: Record<string, unknown>): unknown {
  if (node.kind === Kind.INT || node.kind === Kind.FLOAT) return Number(node.value);
  if (node.kind === Kind.VARIABLE) return variables[node.name.value];
  return undefined;
}

/**
 * What executing `document` may cost, with its variables: every field 1, a list's selection
 * multiplied by the list's size. A field with a `limit` or `first` argument sizes the first list at
 * or below it (a connection's `nodes`/`edges`, or a listing's `events`).
 */
export function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  let operation;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    else if (definition.kind === Kind.OPERATION_DEFINITION && (!operationName || definition.name?.value === operationName)) {
      operation ??= definition;
    }
  }
  if (!operation) return 0;
  const root =
    operation.operation === OperationTypeNode.MUTATION
      ? schema.getMutationType()
      : operation.operation === OperationTypeNode.SUBSCRIPTION
        ? schema.getSubscriptionType()
        : schema.getQueryType();
  if (!root) return 0;

  const costOf = (
    selectionSet: SelectionSetNode | undefined,
    parent: GraphQLNamedType,
    pageSize: number | undefined,
    visiting: Set<string>,
  ): number => {
    if (!selectionSet || !(isObjectType(parent) || isInterfaceType(parent))) return 0;
    let total = 0;
    for (const selection of selectionSet.selections) {
      if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition ? (schema.getType(selection.typeCondition.name.value) ?? parent) : parent;
        total += costOf(selection.selectionSet, type, pageSize, visiting);
        continue;
      }
      if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (!fragment || visiting.has(fragment.name.value)) continue;
        visiting.add(fragment.name.value);
        total += costOf(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value) ?? parent, pageSize, visiting);
        visiting.delete(fragment.name.value);
        continue;
      }
      const name = selection.name.value;
      if (name === '__typename' || INTROSPECTION_ROOTS.has(name)) continue;
      const field: GraphQLField<unknown, unknown> | undefined = parent.getFields()[name];
      if (!field) continue;
      const named = getNamedType(field.type);
      const asked = argumentNumber(selection, ['first', 'limit'], variables) ?? idCount(selection, variables);
      let size = 1;
      let below = asked ?? undefined;
      if (isConnection(named)) {
        below = asked ?? DEFAULT_PAGE_SIZE;
      } else if (isListOutput(field.type)) {
        size = asked ?? pageSize ?? DEFAULT_LIST_SIZE;
        below = undefined;
      } else if (below === undefined && (name === 'nodes' || name === 'edges')) {
        below = pageSize;
      }
      total += 1 + size * costOf(selection.selectionSet, named, below, visiting);
    }
    return total;
  };
  return costOf(operation.selectionSet, root, undefined, new Set());
}

/** The refusal when an operation's cost is over the budget; undefined when it is within. */
export function costRefusal(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown>,
): GraphQLError | undefined {
  const cost = operationCost(schema, document, operationName, variables);
  if (cost <= LIMITS.maxCost) return undefined;
  return limitError(
    'maxCost',
    `The operation would cost ${cost}; the budget is ${LIMITS.maxCost} (lists count their page size: ask for smaller pages).`,
  );
}

/**
 * Why a request's parameters are refused before parsing (a document over the token limit, or
 * variables that are unsafe to store or nested too deep), or undefined: the plugin's onParams, and
 * /graphql's fast path (src/graphql/fast-path.ts), which leaves a refused request to Yoga.
 */
export function paramsRefusal(params: { query?: unknown; variables?: unknown }): GraphQLError | undefined {
  if (typeof params.query === 'string' && exceedsTokenLimit(params.query)) {
    return limitError('maxTokens', `The document has more than ${LIMITS.maxTokens} tokens.`);
  }
  const problem = inputProblem(params.variables, 'variables');
  if (!problem) return undefined;
  const error = problem.limit
    ? limitError('jsonDepth', `${problem.path}: ${problem.message}`)
    : limitFreeError(`${problem.path}: ${problem.message}`);
  error.extensions.details = [problem];
  return error;
}

/**
 * The limits as a Yoga (envelop) plugin: the token-bounded parser, the validation rule, variables
 * that are safe to store and not nested too deep, and the cost check before execution.
 */
export function operationLimitsPlugin<Context extends object>(): Plugin<Context> {
  return {
    // Answered here rather than from the parser: Yoga marks parse errors as the GraphQL-over-HTTP
    // kind that application/json answers with 200, and a refused limit is a 400 for every client.
    onParams({ params, setResult }) {
      const refusal = paramsRefusal(params);
      if (refusal) setResult({ errors: [refusal] });
    },
    onParse({ setParseFn }) {
      setParseFn((source: string | Source) => parseBounded(typeof source === 'string' ? source : source.body));
    },
    onValidate({ addValidationRule }) {
      addValidationRule(operationLimitsRule);
    },
    onExecute({ args: envelopArgs, setResultAndStopExecution }) {
      const args = graphqlArgs(envelopArgs);
      const variables = (args.variableValues ?? {}) as Record<string, unknown>;
      const issues = variableIssues(args.schema, args.document, args.operationName, variables);
      if (issues.length > 0) {
        setResultAndStopExecution({ errors: [variablesError(issues)] });
        return;
      }
      const refusal = costRefusal(args.schema, args.document, args.operationName, variables);
      if (refusal) setResultAndStopExecution({ errors: [refusal] });
    },
  };
}
