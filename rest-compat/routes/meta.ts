import { z } from 'zod';
import type { RestRoute } from '../route.ts';

const apiVersion = z.object({
  date: z.string(),
  status: z.enum(['current', 'supported', 'deprecated', 'sunset']),
  summary: z.string(),
  breakingChanges: z.array(z.string()),
  deprecatedAt: z.string().nullable(),
  sunsetAt: z.string().nullable(),
});

export const metaRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/meta/versions',
    summary: 'List the dated API versions and the version this request resolved to.',
    tag: 'Meta',
    organisation: false,
    operation: /* GraphQL */ `
      query MetaVersions {
        apiVersions {
          current
          resolved
          versions {
            date
            status
            summary
            breakingChanges
            deprecatedAt
            sunsetAt
          }
        }
      }
    `,
    result: (data) => data.apiVersions,
    response: z.object({ current: z.string(), resolved: z.string(), versions: z.array(apiVersion) }),
  },
];
