import { API_VERSIONS, CURRENT_VERSION, type ApiVersion } from '../../src/versions.ts';
import { builder } from '../builder.ts';
import { valuesEnum } from './common.ts';

const VersionStatus = valuesEnum('ApiVersionStatus', 'Life-cycle stage of a dated API version.', {
  current: 'The newest version; new organisations and endpoints pin it.',
  supported: 'Fully supported.',
  deprecated: 'Still served; plan to move to a newer version.',
  sunset: 'No longer served; requests naming it are refused.',
});

const ApiVersionRef = builder.objectRef<ApiVersion>('ApiVersion').implement({
  description: 'One dated version of the API and of webhook payloads.',
  fields: (t) => ({
    date: t.exposeString('date', { description: 'The version, YYYY-MM-DD.' }),
    status: t.field({ type: VersionStatus, description: 'Life-cycle stage.', resolve: (v) => v.status }),
    summary: t.exposeString('summary', { description: 'What the version brought.' }),
    breakingChanges: t.exposeStringList('breakingChanges', {
      description: 'Changes a client of the previous version must adapt to.',
    }),
    deprecatedAt: t.string({
      nullable: true,
      description: 'When the version was deprecated (ISO 8601), or null.',
      resolve: (v) => v.deprecatedAt,
    }),
    sunsetAt: t.string({
      nullable: true,
      description: 'When the version stopped being served (ISO 8601), or null.',
      resolve: (v) => v.sunsetAt,
    }),
  }),
});

interface ApiVersionsInfo {
  current: string;
  resolved: string;
  versions: readonly ApiVersion[];
}

const ApiVersionsRef = builder.objectRef<ApiVersionsInfo>('ApiVersions').implement({
  description: 'The version table and the version this request resolved to.',
  fields: (t) => ({
    current: t.exposeString('current', { description: 'The current version.' }),
    resolved: t.exposeString('resolved', {
      description: 'The version of this request: Service-Version header, else the organisation default, else current.',
    }),
    versions: t.field({ type: [ApiVersionRef], description: 'Every version, oldest first.', resolve: (i) => i.versions }),
  }),
});

builder.queryField('apiVersions', (t) =>
  t.field({
    type: ApiVersionsRef,
    nullable: true,
    description: 'Dated API versions (GET /v1/meta/versions).',
    authScopes: { public: true },
    resolve: (_root, _args, ctx) => ({ current: CURRENT_VERSION, resolved: ctx.apiVersion, versions: API_VERSIONS }),
  }),
);
