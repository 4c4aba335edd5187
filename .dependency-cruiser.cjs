/**
 * The import graph's rules (issue 11): layers only point down, no circles. Run by `npm run lint`
 * (and so by `npm test` / CI). The layers, top to bottom:
 *   server/ (composition root) → schema/, rest-compat/, workflows/ (worker) → src/ → src/generated
 * workflows/workflows.ts is Temporal sandbox code: it may import only types from anything
 * outside the Temporal workflow API.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Two modules that import each other (directly or round a longer loop): move the shared piece down.',
      from: {},
      to: { circular: true, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'src-points-down',
      severity: 'error',
      comment: 'src/ is the bottom layer: it never imports the GraphQL schema, the REST layer, the worker or the composition root.',
      from: { path: '^src/' },
      to: { path: '^(schema|rest-compat|workflows|server)/' },
    },
    {
      name: 'surfaces-do-not-import-each-other-or-the-root',
      severity: 'error',
      comment: 'schema/ and rest-compat/ call services; neither reaches into the composition root (server/) or the worker.',
      from: { path: '^(schema|rest-compat)/' },
      to: { path: '^(server|workflows)/' },
    },
    {
      name: 'schema-does-not-import-rest',
      severity: 'error',
      comment: 'The GraphQL schema knows nothing of the REST mapping laid over it.',
      from: { path: '^schema/' },
      to: { path: '^rest-compat/' },
    },
    {
      name: 'worker-does-not-import-surfaces',
      severity: 'error',
      comment: 'The Temporal worker runs services, never the GraphQL schema or the REST layer (a sweep must not build Pothos).',
      from: { path: '^workflows/' },
      to: { path: '^(schema|rest-compat|server)/' },
    },
    {
      name: 'workflow-sandbox-imports-types-only',
      severity: 'error',
      comment: 'Workflow code runs in the deterministic sandbox: activities and services only as types.',
      from: { path: '^workflows/workflows\\.ts$' },
      to: { path: '^(src|workflows/activities)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'app-does-not-import-tests',
      severity: 'error',
      comment: 'Production code never imports tests, benchmarks or scripts.',
      from: { path: '^(src|schema|rest-compat|workflows|server)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^(test|bench|scripts)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|src/generated)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
