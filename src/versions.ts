import { AppError } from './errors.ts';

/** The dated API versions of ../shared/spec/contract.md, newest last. */
export type VersionStatus = 'current' | 'supported' | 'deprecated' | 'sunset';

export interface ApiVersion {
  date: string;
  status: VersionStatus;
  summary: string;
  breakingChanges: string[];
  deprecatedAt: string | null;
  sunsetAt: string | null;
}

export const API_VERSIONS: readonly ApiVersion[] = [
  {
    date: '2024-11-01',
    status: 'sunset',
    summary: 'First dated version.',
    breakingChanges: [],
    deprecatedAt: '2025-04-01T00:00:00.000Z',
    sunsetAt: '2025-10-01T00:00:00.000Z',
  },
  {
    date: '2025-04-01',
    status: 'deprecated',
    summary: 'Stabilised management API.',
    breakingChanges: [],
    deprecatedAt: '2025-10-01T00:00:00.000Z',
    sunsetAt: null,
  },
  {
    date: '2025-10-01',
    status: 'supported',
    summary: 'Money amounts named for their unit; pass counts in ticket webhooks.',
    breakingChanges: ['Order: total and subtotal renamed totalAmount and subtotalAmount', 'Tickets issued: passCount added'],
    deprecatedAt: null,
    sunsetAt: null,
  },
  {
    date: '2026-06-01',
    status: 'current',
    summary: 'Line item counts on orders; venues on event webhooks.',
    breakingChanges: ['Order: lineItemCount added', 'Event view: venueId added (null when none)'],
    deprecatedAt: null,
    sunsetAt: null,
  },
];

export const CURRENT_VERSION = API_VERSIONS.find((v) => v.status === 'current')!.date;

const DATE = /^\d{4}-\d{2}-\d{2}$/;

export function findVersion(date: string): ApiVersion | undefined {
  return API_VERSIONS.find((v) => v.date === date);
}

/** A known version that is not sunset, or UNSUPPORTED_VERSION naming where the value came from. */
export function requireUsableVersion(date: string, source: string): string {
  const version = DATE.test(date) ? findVersion(date) : undefined;
  if (!version) {
    throw new AppError('UNSUPPORTED_VERSION', `Unknown API version "${date}" in ${source}.`, {
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

/** Header, then the organisation's default, then the current version (../shared/spec/service-spec.md §9). */
export function resolveVersion(header: string | undefined, organisationDefault: string | undefined): string {
  if (header !== undefined && header.trim() !== '') return requireUsableVersion(header.trim(), 'the Service-Version header');
  if (organisationDefault) {
    const version = findVersion(organisationDefault);
    if (version && version.status !== 'sunset') return version.date;
  }
  return CURRENT_VERSION;
}
