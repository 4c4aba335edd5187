import { AppError } from './errors.ts';

/**
 * The dated API versions of docs/spec/contract.md, newest last, and what each changed. The
 * changes are declared once, here, and everything versioned follows from them (the way Stripe
 * versions its API):
 *   - webhook payloads, built at the current version and taken down one version at a time to the
 *     endpoint's pin (src/webhooks/payloads.ts);
 *   - `/v1` and `/live` responses, shaped at the request's resolved version wherever a versioned
 *     resource appears in them (single, list, nested, create and update answers), and request
 *     bodies written in an older version's shape, upgraded (rest-compat/versioned.ts);
 *   - GraphQL, which keeps one schema: a field a newer version renamed stays as a deprecated field
 *     whose reason names the version (schema/types/versioned-fields.ts);
 *   - `GET /meta/versions`, whose `breakingChanges` are these declarations described.
 * docs/api.md "Versions" says how to add a version.
 */
export type VersionStatus = 'current' | 'supported' | 'deprecated' | 'sunset';

/** The resources versions change, as named in `breakingChanges`. */
export type VersionedResource = 'Order' | 'Event' | 'Customer' | 'TicketsIssued' | 'Redemption';

const RESOURCE_NAMES: Record<VersionedResource, string> = {
  Order: 'Order',
  Event: 'Event',
  Customer: 'Customer',
  TicketsIssued: 'Tickets issued',
  Redemption: 'Ticket redeemed',
};

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/**
 * One change a version made to one resource. Each can take a resource down from the version's shape
 * to the previous version's; a rename of an input field also takes a request body up.
 */
export type VersionChange =
  | {
      /** The field `from` (the older name) is called `to` from this version on. */
      kind: 'renamed';
      resource: VersionedResource;
      from: string;
      to: string;
      /** Whether request bodies carry the field too: an older body's `from` is read as `to`. */
      input?: boolean;
      /** The GraphQL type of the deprecated field kept under the old name (a scalar; `to` is read from the parent). */
      graphql?: { type: 'Int' | 'String' | 'Boolean'; nullable?: boolean };
    }
  | {
      /** The field is new in this version: older versions do not show it. */
      kind: 'added';
      resource: VersionedResource;
      field: string;
      /** Said after the change, e.g. "null when none". */
      note?: string;
    }
  | {
      /** The field is gone from this version on; older versions show it as `restore` computes it. */
      kind: 'removed';
      resource: VersionedResource;
      field: string;
      restore: (resource: JsonObject) => Json;
      note?: string;
    };

export interface VersionDeclaration {
  date: string;
  status: VersionStatus;
  summary: string;
  changes: readonly VersionChange[];
  deprecatedAt: string | null;
  /** When the version stopped being served, or (deprecated) when it will stop. */
  sunsetAt: string | null;
}

/** A version as `GET /meta/versions` shows it. */
export interface ApiVersion extends VersionDeclaration {
  breakingChanges: string[];
}

/** `breakingChanges` text of one change (generated, so the list can never disagree with what the transforms do). */
export function describeChange(change: VersionChange): string {
  const resource = RESOURCE_NAMES[change.resource];
  if (change.kind === 'renamed') return `${resource}: ${change.from} renamed ${change.to}`;
  const note = change.note ? ` (${change.note})` : '';
  return `${resource}: ${change.field} ${change.kind}${note}`;
}

const DECLARED: VersionDeclaration[] = [
  {
    date: '2024-11-01',
    status: 'sunset',
    summary: 'First dated version.',
    changes: [],
    deprecatedAt: '2025-04-01T00:00:00.000Z',
    sunsetAt: '2025-10-01T00:00:00.000Z',
  },
  {
    date: '2025-04-01',
    status: 'deprecated',
    summary: 'Stabilised management API.',
    changes: [],
    deprecatedAt: '2025-10-01T00:00:00.000Z',
    // Announced: requests naming it are refused from then on (Sunset header, RFC 8594).
    sunsetAt: '2027-04-01T00:00:00.000Z',
  },
  {
    date: '2025-10-01',
    status: 'supported',
    summary: 'Money amounts named for their unit; pass counts in ticket webhooks.',
    changes: [
      { kind: 'renamed', resource: 'Order', from: 'total', to: 'totalAmount', graphql: { type: 'Int' } },
      { kind: 'renamed', resource: 'Order', from: 'subtotal', to: 'subtotalAmount', graphql: { type: 'Int' } },
      { kind: 'added', resource: 'TicketsIssued', field: 'passCount' },
    ],
    deprecatedAt: null,
    sunsetAt: null,
  },
  {
    date: '2026-06-01',
    status: 'supported',
    summary: 'Line item counts on orders; venues on events.',
    changes: [
      { kind: 'added', resource: 'Order', field: 'lineItemCount' },
      { kind: 'added', resource: 'Event', field: 'venueId', note: 'null when none' },
    ],
    deprecatedAt: null,
    sunsetAt: null,
  },
  {
    date: '2026-11-27',
    status: 'current',
    summary: 'Per-object sequence numbers in webhook payloads; the order of a redeemed ticket.',
    // Only webhook payloads (deliveries and GET /v1/webhook-events) carry them: the place of the
    // event among the events of its object, so a receiver can drop one older than what it has
    // applied; a redemption is numbered among its pass's order's events, which it now names.
    changes: [
      ...(['Order', 'Customer', 'Event', 'TicketsIssued', 'Redemption'] as const).map((resource) => ({
        kind: 'added' as const,
        resource,
        field: 'sequence',
        note: "webhook payloads: the event's place among its object's events, 1, 2, ...",
      })),
      { kind: 'added', resource: 'Redemption', field: 'orderId', note: "webhook payloads: the pass's order" },
    ],
    deprecatedAt: null,
    sunsetAt: null,
  },
];

function described(declaration: VersionDeclaration): ApiVersion {
  return { ...declaration, breakingChanges: declaration.changes.map(describeChange) };
}

/** Every version, oldest first. */
export const API_VERSIONS: ApiVersion[] = DECLARED.map(described);

export let CURRENT_VERSION = API_VERSIONS.find((v) => v.status === 'current')!.date;

/**
 * Declares one more version, newer than every other, which becomes current (the one before it
 * supported). For tests that show a new version flowing through every surface: it must run before
 * the GraphQL schema and the REST routes are built (import them afterwards), as a real version is
 * declared before the process starts.
 */
export function declareVersion(declaration: Omit<VersionDeclaration, 'status'>): void {
  const newest = API_VERSIONS.at(-1)!;
  if (declaration.date <= newest.date) throw new Error(`version ${declaration.date} is not newer than ${newest.date}`);
  for (const version of API_VERSIONS) if (version.status === 'current') version.status = 'supported';
  API_VERSIONS.push(described({ ...declaration, status: 'current' }));
  CURRENT_VERSION = declaration.date;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function findVersion(date: string): ApiVersion | undefined {
  return API_VERSIONS.find((v) => v.date === date);
}

/** A known version that is not sunset, or UNSUPPORTED_VERSION naming where the value came from. */
export function requireUsableVersion(date: string, source: string): string {
  const version = DATE.test(date) ? findVersion(date) : undefined;
  if (!version) {
    throw new AppError('UNSUPPORTED_VERSION', `Unknown API version "${date.slice(0, 40)}" in ${source}.`, {
      supported: API_VERSIONS.filter((v) => v.status !== 'sunset').map((v) => v.date),
    });
  }
  if (version.status === 'sunset') {
    throw new AppError('UNSUPPORTED_VERSION', `API version ${date} (${source}) is sunset.`, {
      supported: API_VERSIONS.filter((v) => v.status !== 'sunset').map((v) => v.date),
    });
  }
  return version.date;
}

/** Header, then the organisation's default, then the current version (docs/spec/service-spec.md §9). */
export function resolveVersion(header: string | undefined, organisationDefault: string | undefined): string {
  if (header !== undefined && header.trim() !== '') return requireUsableVersion(header.trim(), 'the Service-Version header');
  if (organisationDefault) {
    const version = findVersion(organisationDefault);
    if (version && version.status !== 'sunset') return version.date;
  }
  return CURRENT_VERSION;
}

/**
 * Headers of a response at `date` when that version is deprecated: `Deprecation` (RFC 9745, the
 * moment as a structured-field date), `Sunset` (RFC 8594) when a date is announced, and a `Link`
 * to the version table. None for a version in good standing.
 */
export function deprecationHeaders(date: string, versionsUrl: string): Record<string, string> {
  const version = findVersion(date);
  if (version?.status !== 'deprecated') return {};
  const headers: Record<string, string> = {};
  if (version.deprecatedAt) headers.Deprecation = `@${Math.floor(Date.parse(version.deprecatedAt) / 1000)}`;
  if (version.sunsetAt) headers.Sunset = new Date(version.sunsetAt).toUTCString();
  headers.Link = `<${versionsUrl}>; rel="deprecation"; type="application/json"`;
  return headers;
}

/**
 * The changes to undo, in order, to take a resource from the current version down to `to`: every
 * version newer than `to`, newest first, each version's changes last declared first.
 */
function changesDownTo(to: string, from: string): VersionChange[] {
  const dates = API_VERSIONS.map((v) => v.date);
  const start = dates.indexOf(from);
  const target = dates.indexOf(to);
  if (start === -1 || target === -1 || target > start) throw new Error(`cannot transform from ${from} to ${to}`);
  const changes: VersionChange[] = [];
  for (let i = start; i > target; i -= 1) changes.push(...[...API_VERSIONS[i]!.changes].reverse());
  return changes;
}

/** A copy of `object` with key `from` called `to`, in the same place. */
function renameKey(object: JsonObject, from: string, to: string): JsonObject {
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(object)) out[key === from ? to : key] = value;
  return out;
}

/** `data` (a `resource` at version `from`, current by default) as version `to` shows it. */
export function transformDown(resource: VersionedResource, data: JsonObject, to: string, from = CURRENT_VERSION): JsonObject {
  if (to === from) return data;
  let current = data;
  for (const change of changesDownTo(to, from)) {
    if (change.resource !== resource) continue;
    if (change.kind === 'renamed') {
      if (change.to in current) current = renameKey(current, change.to, change.from);
    } else if (change.kind === 'added') {
      if (change.field in current) {
        current = { ...current };
        delete current[change.field];
      }
    } else {
      current = { ...current, [change.field]: change.restore(current) };
    }
  }
  return current;
}

/**
 * A request body of `resource` written at version `from`, in the current version's shape: each
 * input field renamed since is read under its new name (unless the body also has the new one, which
 * then stands, and the old name is refused as unknown like any other).
 */
export function upgradeInput(resource: VersionedResource, body: JsonObject, from: string): JsonObject {
  if (from === CURRENT_VERSION) return body;
  let current = body;
  for (const change of changesDownTo(from, CURRENT_VERSION).reverse()) {
    if (change.resource !== resource || change.kind !== 'renamed' || !change.input) continue;
    if (change.from in current && !(change.to in current)) current = renameKey(current, change.from, change.to);
  }
  return current;
}

/**
 * The JSON Schema of a `resource` object (the current version's, as the OpenAPI documents print it)
 * as version `to` shows it: the same changes as transformDown, applied to properties and `required`.
 * `direction` 'input' applies only what a request body sees (renamed input fields).
 */
export function transformSchemaDown(
  resource: VersionedResource,
  schema: JsonObject,
  to: string,
  direction: 'input' | 'output',
): JsonObject {
  if (to === CURRENT_VERSION) return schema;
  let properties = { ...((schema.properties as JsonObject | undefined) ?? {}) };
  let required = [...((schema.required as string[] | undefined) ?? [])];
  for (const change of changesDownTo(to, CURRENT_VERSION)) {
    if (change.resource !== resource) continue;
    if (change.kind === 'renamed') {
      if (direction === 'input' && !change.input) continue;
      properties = renameKey(properties, change.to, change.from);
      required = required.map((name) => (name === change.to ? change.from : name));
    } else if (direction === 'input') {
      continue;
    } else if (change.kind === 'added') {
      delete properties[change.field];
      required = required.filter((name) => name !== change.field);
    } else {
      properties[change.field] = {};
      required.push(change.field);
    }
  }
  return { ...schema, properties, ...(schema.required ? { required } : {}) };
}

/** Whether any version newer than `date` changed `resource` (a response at an old version needs shaping). */
export function changedSince(resource: VersionedResource, date: string): boolean {
  return date !== CURRENT_VERSION && changesDownTo(date, CURRENT_VERSION).some((change) => change.resource === resource);
}

/** The deprecation reason of the GraphQL field a rename left behind. */
export function renamedFieldReason(change: Extract<VersionChange, { kind: 'renamed' }>, date: string): string {
  return `Renamed ${change.to} in API version ${date}.`;
}
