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
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type GraphQLOutputType,
  type SelectionSetNode,
  type ValidationContext,
  type ValueNode,
} from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { CostBucket, CostBudgets, CostCaller, CostCharge, CostReport } from '../limits/cost-budget.ts';
import { LIMITS, type LimitName } from '../limits/limits.ts';
import { MAX_LIMIT } from '../pagination.ts';
import { findUnsafeString, inputProblem } from '../http/input-safety.ts';
import { graphqlArgs } from './execution-args.ts';
import { fragmentsOf, variableIssues, variablesError } from './variables.ts';

/**
 * Operation limits of the GraphQL API, checked before anything executes: a document
 * of 200,000 aliases, 2,000 sign-in mutations in one request or a list nested 10,000 deep must
 * cost the server a bounded amount of work and write nothing.
 *
 * - tokens: the parser stops at LIMITS.maxTokens (graphql-js `maxTokens`), so parsing is bounded;
 * - depth, aliases, sign-in mutations, and strings PostgreSQL cannot store: one validation pass;
 * - cost: fields count 1, a list multiplies its selection by its page size (the `limit`/`first`
 *   argument, from the variables when given that way; 20 by default; 10 for a list without one),
 *   checked with the variables right before execution, and charged there to the organisation's
 *   cost budget (src/limits/cost-budget.ts), which the answer reports in extensions.cost.
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
export function limitError(limit: LimitName, message: string, nodes?: readonly FieldNode[], max: number = LIMITS[limit]): GraphQLError {
  return new GraphQLError(message, {
    nodes,
    // spec: false keeps the 400 for application/json too (Yoga answers spec validation errors 200 there).
    extensions: { code: 'VALIDATION_FAILED', limit, max, http: { status: 400, spec: false } },
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
 * One validation rule for depth, aliases (their number, and none beginning with __), sign-in
 * mutations and unsafe string literals. Fragments
 * are followed where they are spread (validation refuses fragment cycles on its own; the visited
 * set makes this rule safe even before that).
 */
export function operationLimitsRule(context: ValidationContext): ASTVisitor {
  const fragments = fragmentsOf(context.getDocument());
  let aliases = 0;
  return {
    Field(node) {
      // Names beginning with __ are the introspection system's (the GraphQL specification); an
      // alias such as __proto__ would name an answer's key that JavaScript objects treat apart, and
      // a secret shown once could be lost under it.
      if (node.alias?.value.startsWith('__')) {
        context.reportError(
          limitFreeError(`The alias ${node.alias.value.slice(0, 50)} begins with __, which is reserved for introspection.`),
        );
      }
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

/** The operation a request runs (the named one, or the first) and the document's fragments by name. */
function operationOf(
  document: DocumentNode,
  operationName: string | null | undefined,
): { fragments: Map<string, FragmentDefinitionNode>; operation: OperationDefinitionNode | undefined } {
  const fragments = new Map<string, FragmentDefinitionNode>();
  let operation: OperationDefinitionNode | undefined;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    else if (definition.kind === Kind.OPERATION_DEFINITION && (!operationName || definition.name?.value === operationName)) {
      operation ??= definition;
    }
  }
  return { fragments, operation };
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
  const { fragments, operation } = operationOf(document, operationName);
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

/**
 * The refusal of an operation that costs more than `max` (LIMITS.maxCost, or the caller's whole
 * cost budget when that is smaller: waiting would never let it run); undefined when it is within.
 */
export function costRefusal(cost: number, max: number = LIMITS.maxCost): GraphQLError | undefined {
  if (cost <= max) return undefined;
  return limitError(
    'maxCost',
    `The operation would cost ${cost}; the budget is ${max} (lists count their page size: ask for smaller pages).`,
    undefined,
    max,
  );
}

/**
 * What an executed operation cost by operationCost's rule, counted on what it answered: a list
 * counts its real length (3 events of a page of 50 cost 3 times the selection), a field absent from
 * the answer (skipped, or under a null or failed parent) nothing. A list sized by its arguments
 * costs at most what operationCost said; one without a size argument (estimated at 10) may cost
 * more. The walk follows a plan made once per document (see costPlan), so a page of events costs
 * one addition per event, not one look-up per field.
 */
export function resultCost(document: DocumentNode, operationName: string | null | undefined, data: unknown): number {
  const plan = costPlanOf(document, operationName);
  return plan ? planCost(plan, data) : 0;
}

/**
 * How to count one selection set on an answered object. Fields selected directly, without @skip
 * or @include, are in every object GraphQL answers for it (null when they failed or are null):
 * they count as one constant. Fields of fragments or with those directives are looked up.
 */
interface CostPlan {
  /** Fields always present: each costs 1. */
  always: number;
  /** Fields to descend into, and fields that may be absent (`counted: false`: not in `always`). */
  fields: Array<{ key: string; below: CostPlan | undefined; counted: boolean }>;
}

const costPlans = new WeakMap<DocumentNode, Map<string, CostPlan | null>>();

function costPlanOf(document: DocumentNode, operationName: string | null | undefined): CostPlan | null {
  let byOperation = costPlans.get(document);
  if (!byOperation) costPlans.set(document, (byOperation = new Map<string, CostPlan | null>()));
  const key = operationName ?? '';
  let plan = byOperation.get(key);
  if (plan === undefined) {
    plan = costPlan(document, operationName);
    byOperation.set(key, plan);
  }
  return plan;
}

function costPlan(document: DocumentNode, operationName: string | null | undefined): CostPlan | null {
  const { fragments, operation } = operationOf(document, operationName);
  if (!operation) return null;
  const planOf = (selectionSet: SelectionSetNode, visiting: Set<string>): CostPlan => {
    const plan: CostPlan = { always: 0, fields: [] };
    const collect = (selections: SelectionSetNode, direct: boolean) => {
      for (const selection of selections.selections) {
        if (selection.kind === Kind.INLINE_FRAGMENT) {
          collect(selection.selectionSet, false);
        } else if (selection.kind === Kind.FRAGMENT_SPREAD) {
          const fragment = fragments.get(selection.name.value);
          if (!fragment || visiting.has(fragment.name.value)) continue;
          visiting.add(fragment.name.value);
          collect(fragment.selectionSet, false);
          visiting.delete(fragment.name.value);
        } else {
          const name = selection.name.value;
          if (name === '__typename' || INTROSPECTION_ROOTS.has(name)) continue;
          const counted = direct && !selection.directives?.length;
          const below = selection.selectionSet ? planOf(selection.selectionSet, visiting) : undefined;
          if (counted) plan.always += 1;
          if (below || !counted) plan.fields.push({ key: selection.alias?.value ?? name, below, counted });
        }
      }
    };
    collect(selectionSet, true);
    return plan;
  };
  return planOf(operation.selectionSet, new Set());
}

function planCost(plan: CostPlan, value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let total = 0;
    for (const item of value) total += planCost(plan, item);
    return total;
  }
  let total = plan.always;
  for (const field of plan.fields) {
    const below = (value as Record<string, unknown>)[field.key];
    if (below === undefined) continue;
    if (!field.counted) total += 1;
    if (field.below) total += planCost(field.below, below);
  }
  return total;
}

/** Results answered with extensions.cost, and the result each was made from (see serialisedResult). */
const costed = new WeakMap<object, { base: ExecutionResult; cost: CostReport }>();

/** `result` with extensions.cost; a new object, since `result` may be the result cache's. */
export function withCost(result: ExecutionResult, cost: CostReport): ExecutionResult {
  const answered = { ...result, extensions: { ...result.extensions, cost } };
  costed.set(answered, { base: result, cost });
  return answered;
}

/** The result an answer was made from by withCost, with its cost; undefined for any other. */
export function costedFrom(result: object): { base: ExecutionResult; cost: CostReport } | undefined {
  return costed.get(result);
}

/** The refusal of an operation its organisation's bucket cannot pay now: 429 with Retry-After. */
function costRateLimited(bucket: CostBucket, requested: number, retryAfterSeconds: number, requestId: unknown): GraphQLError {
  return new GraphQLError(
    `The organisation's ${bucket.lane} cost budget has ${bucket.remaining()} of ${bucket.budget} points left and this operation asks for ${requested}; it restores ${bucket.restoreRate} points a second: try again in ${retryAfterSeconds} s.`,
    {
      extensions: {
        code: 'RATE_LIMITED',
        ...(typeof requestId === 'string' ? { requestId } : {}),
        // spec: false: a 429 for application/json clients too.
        http: { status: 429, headers: { 'Retry-After': String(retryAfterSeconds) }, spec: false },
      },
    },
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

/** An operation let through: its arguments, the cost it asked, its bucket (with budgets) and its cost report. */
interface Admitted {
  args: ExecutionArgs;
  requested: number;
  bucket: CostBucket | undefined;
  report: (actual: number) => CostReport;
}

/**
 * What an operation meets before it runs, and a subscription as it starts: its variables, its cost
 * against the limit and its organisation's bucket, and the charge to the bucket. Answers what its
 * answer settles, or undefined once `refuse` was handed the refusal.
 */
function admit(
  envelopArgs: object,
  budgets: CostBudgets | undefined,
  refuse: (result: ExecutionResult) => void,
): Admitted | undefined | Promise<Admitted | undefined> {
  const args = graphqlArgs(envelopArgs);
  const variables = (args.variableValues ?? {}) as Record<string, unknown>;
  const issues = variableIssues(args.schema, args.document, args.operationName, variables);
  if (issues.length > 0) {
    refuse({ errors: [variablesError(issues)] });
    return undefined;
  }
  const requested = operationCost(args.schema, args.document, args.operationName, variables);
  const caller = args.contextValue as CostCaller & { requestId?: unknown };
  const bucket = budgets?.bucketOf(caller);
  const report = (actual: number): CostReport =>
    bucket?.report(requested, actual) ?? { requested, actual, budget: null, remaining: null, restoreRate: null };
  const refusal = costRefusal(requested, Math.min(LIMITS.maxCost, bucket?.budget ?? LIMITS.maxCost));
  if (refusal) {
    refuse(withCost({ errors: [refusal] }, report(0)));
    return undefined;
  }
  const admitted: Admitted = { args, requested, bucket, report };
  if (!bucket) return admitted;
  const paidOrNot = (charge: CostCharge) => {
    if (charge.paid) return admitted;
    refuse(withCost({ errors: [costRateLimited(bucket, requested, charge.retryAfterSeconds, caller.requestId)] }, report(0)));
    return undefined;
  };
  const charge = budgets!.charge(bucket, requested);
  return charge instanceof Promise ? charge.then(paidOrNot) : paidOrNot(charge);
}

/**
 * The limits as a Yoga (envelop) plugin: the token-bounded parser, the validation rule, variables
 * that are safe to store and not nested too deep, and the cost check before execution. With
 * `budgets`, each operation is also charged to its organisation's cost budget (requested before it
 * runs, refunded to actual after; src/limits/cost-budget.ts), and every result of an operation that
 * got as far as its cost (answered, refused for its cost or its budget) carries extensions.cost.
 */
export function operationLimitsPlugin<Context extends object>(budgets?: CostBudgets): Plugin<Context> {
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
      const answered = (admitted: Admitted | undefined) =>
        admitted && {
          onExecuteDone({ result, setResult }: { result: unknown; setResult: (result: ExecutionResult) => void }) {
            if (typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return;
            const executed = result as ExecutionResult;
            const actual = resultCost(admitted.args.document, admitted.args.operationName, executed.data);
            if (admitted.bucket) budgets!.settle(admitted.bucket, admitted.requested, actual);
            setResult(withCost(executed, admitted.report(actual)));
          },
        };
      const judged = admit(envelopArgs, budgets, setResultAndStopExecution);
      return judged instanceof Promise ? judged.then(answered) : answered(judged);
    },
    // A subscription is judged as a query of the same selection is: its variables, and the cost of
    // one event's selection, charged to the organisation's budget once, as it starts (its events
    // are bounded by the subscriptions a credential may hold open, src/live/live.ts). One refused
    // as it starts (no right, nothing to follow, over its bounds) opened nothing: the charge comes
    // back, as a refused query's does, and the refusal reports it (test/platform/cost-budget.test.ts).
    onSubscribe({ args: envelopArgs, setResultAndStopExecution }) {
      const refunded = (admitted: Admitted | undefined) =>
        admitted && {
          onSubscribeResult({ result, setResult }: { result: unknown; setResult: (result: ExecutionResult) => void }) {
            if (typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return;
            if (admitted.bucket) budgets!.settle(admitted.bucket, admitted.requested, 0);
            setResult(withCost(result, admitted.report(0)));
          },
        };
      const judged = admit(envelopArgs, budgets, setResultAndStopExecution);
      return judged instanceof Promise ? judged.then(refunded) : refunded(judged);
    },
  };
}
