import { propagation, trace, type Context, type Tracer } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Config } from './config.ts';

/**
 * OpenTelemetry traces, off unless the standard variables ask for them: an OTLP endpoint
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces) and not
 * OTEL_SDK_DISABLED. Off, every span below is OpenTelemetry's no-op and costs nothing measurable.
 *
 * On, one trace follows a change from the HTTP request (src/http/metrics.ts) through its GraphQL
 * operation (src/graphql/pipeline.ts), the start of the webhook workflow (the dispatcher starts a
 * batch in the context of its first dispatch), the workflow and its activity (Temporal's
 * OpenTelemetry interceptors, workflows/worker.ts), to the webhook attempt, whose request carries
 * `traceparent` to the receiver (src/webhooks/deliver.ts). Spans of a request carry its request id.
 */
export const tracer: Tracer = trace.getTracer('ticketing-service');

/** The baggage entry that carries a request's id to every span started under it, across processes. */
export const REQUEST_ID_BAGGAGE = 'request.id';

/** Puts the request id of the context's baggage on each span as it starts (HTTP, GraphQL, workflow starts, activities, attempts). */
class RequestIdSpanProcessor implements SpanProcessor {
  onStart(span: Span, parentContext: Context): void {
    const requestId = propagation.getBaggage(parentContext)?.getEntry(REQUEST_ID_BAGGAGE)?.value;
    if (requestId) span.setAttribute('request.id', requestId);
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface Tracing {
  /** What the Temporal worker's workflow-span exporter hands its spans to. */
  processor: SpanProcessor;
  resource: Resource;
  shutdown(): Promise<void>;
}

let active: Tracing | null = null;

/** The tracing this process started, if any (the worker gives it to Temporal's interceptors). */
export function activeTracing(): Tracing | null {
  return active;
}

type TracingConfig = Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_SDK_DISABLED'>;

/** Where spans go, when tracing is configured (and not disabled). */
export function tracesEndpoint(config: TracingConfig): string | undefined {
  if (config.OTEL_SDK_DISABLED) return undefined;
  return (
    config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
    (config.OTEL_EXPORTER_OTLP_ENDPOINT ? `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/traces` : undefined)
  );
}

/**
 * Starts tracing for this process when the configuration asks for it (or when `exporter` is given:
 * tests export to memory). Registers the global provider, the W3C propagator and the async context
 * manager. Answers null when tracing stays off.
 *
 * The SDK and the OTLP exporter are loaded only then: off, a process never loads them (with
 * Temporal's OpenTelemetry interceptors, src/temporal.ts, they were ~5 MB of an idle API's heap).
 */
export async function startTracing(
  config: TracingConfig & Pick<Config, 'OTEL_SERVICE_NAME'>,
  role: 'api' | 'worker',
  exporter?: SpanExporter,
): Promise<Tracing | null> {
  if (active) return active;
  const endpoint = tracesEndpoint(config);
  if (!exporter && !endpoint) return null;
  const [{ Resource }, { BatchSpanProcessor, SimpleSpanProcessor }, { NodeTracerProvider }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  if (active) return active;
  const resource = new Resource({ 'service.name': config.OTEL_SERVICE_NAME ?? `ticketing-${role}`, 'service.namespace': 'ticketing' });
  const processor = exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new RequestIdSpanProcessor(), processor] });
  provider.register();
  active = {
    processor,
    resource,
    async shutdown() {
      await provider.shutdown();
    },
  };
  return active;
}
