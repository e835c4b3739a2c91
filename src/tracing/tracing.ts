// OpenTelemetry for a process of this project (the worker, the start-mail CLI), through Temporal's own
// interceptors (@temporalio/interceptors-opentelemetry). On as the OTEL_* variables say (src/config/
// tracingSettings.ts): then a tracer provider is registered that exports over OTLP (HTTP/protobuf) in batches;
// any other backend (a Zipkin, say) sits behind an OpenTelemetry Collector. Off, nothing of
// the OpenTelemetry SDK is loaded, no interceptor runs in the process and the spans the transports open
// (src/tracing/mailSpan.ts) go to the API's no-op tracer.
//
// The OTel SDK is the 1.x line on purpose: @temporalio/interceptors-opentelemetry 1.24.0 is built against
// it (its workflow spans cross the sandbox as 1.x ReadableSpans).
import type { ClientInterceptors } from '@temporalio/client';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';

export interface TracingSettings {
  /**
   * OTEL_SERVICE_NAME, or the process's default (src/config/configDefaults.ts). The resource takes the variable
   * through the resources package's environment detector; this is the name when it is unset.
   */
  serviceName: string;
  /** OTEL_BSP_SCHEDULE_DELAY: how long a span may wait in the batch before export (ms); default 1000. */
  batchDelayMs?: number;
}

export interface Tracing {
  /** For the worker: activity interceptors, the client interceptor of its own client, the workflow span sink. */
  workerInterceptors: Pick<WorkerInterceptors, 'activity' | 'client'>;
  workflowSpanSinks: InjectedSinks<OpenTelemetrySinks>;
  /** For a Temporal client of this process. */
  clientInterceptors: ClientInterceptors;
  /** Exports what is left and stops; the last step of an orderly stop. */
  shutdown(): Promise<void>;
}

/**
 * Registers the process's tracer provider and returns what Temporal needs of it. Call once, before any
 * client or worker is made.
 */
export async function startTracing(settings: TracingSettings): Promise<Tracing> {
  // Loaded only when on: off costs no module load.
  const api = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  const { Resource, detectResourcesSync, envDetectorSync } = await import('@opentelemetry/resources');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const temporalOtel = await import('@temporalio/interceptors-opentelemetry');

  // The SDK's own attributes, then this process's default name, then OTEL_SERVICE_NAME and
  // OTEL_RESOURCE_ATTRIBUTES (the later wins).
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': settings.serviceName }))
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }));
  const batch = { scheduledDelayMillis: settings.batchDelayMs ?? 1_000 };
  // No URL here: the exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT plus
  // /v1/traces, with their headers, timeout and compression, as the specification says.
  const processor = new BatchSpanProcessor(new OTLPTraceExporter(), batch);
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(processor);
  // The context manager carries the activity's span down to the provider request's span across awaits.
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);

  return {
    workerInterceptors: {
      client: { workflow: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor()] },
      activity: [
        (ctx) => ({
          inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    // The workflow's spans come out of the sandbox finished: the same batch gets them.
    workflowSpanSinks: { exporter: temporalOtel.makeWorkflowExporter(processor, resource) },
    clientInterceptors: { workflow: [new temporalOtel.OpenTelemetryWorkflowClientInterceptor()] },
    shutdown: () => processor.shutdown(),
  };
}

/**
 * A prebuilt bundle (WORKFLOW_BUNDLE_PATH) has the workflows' interceptors in it (one bundle serves both, and
 * turning tracing on needs no rebuild); with tracing off their spans end here, in a sink that drops them. A
 * bundle made at start-up leaves them out when tracing is off (src/workerOptions.ts).
 */
export const DROPPED_WORKFLOW_SPANS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined, callDuringReplay: false } },
};
