import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The slowest files, each holding a worker for one to four minutes, in this order. A fresh clone
 * has no record of the last run's durations, so vitest would start them wherever the glob puts
 * them, and one started last leaves the other worker idle until it ends.
 */
const SLOWEST = [
  'test/platform/schemathesis.test.ts',
  'test/platform/build.test.ts',
  'test/platform/start.test.ts',
  'test/platform/prisma-engine.test.ts',
  'test/platform/many-processes.test.ts',
  'test/webhooks/webhook-fairness.test.ts',
  'test/webhooks/webhook-delivery.test.ts',
  'test/webhooks/webhook-resend-limits.test.ts',
];

/** Vitest's order (longest first by its record of the last run), with the slowest files first. */
export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST.findIndex((file) => spec.moduleId.endsWith(file));
      return at === -1 ? SLOWEST.length : at;
    };
    const sorted = await super.sort(files);
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
