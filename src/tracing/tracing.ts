// OpenTelemetry through Temporal's interceptors, OTLP only; why the SDK stays on 1.x: docs/production.md, "Traces".
import type { ClientInterceptors } from '@temporalio/client';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';

export interface TracingSettings {
  /** The name when OTEL_SERVICE_NAME is unset. */
  serviceName: string;
  batchDelayMs?: number;
}

export interface Tracing {
  workerInterceptors: Pick<WorkerInterceptors, 'activity' | 'client'>;
  workflowSpanSinks: InjectedSinks<OpenTelemetrySinks>;
  clientInterceptors: ClientInterceptors;
  shutdown(): Promise<void>;
}

/** Call once, before any client or worker is made. */
export async function startTracing(settings: TracingSettings): Promise<Tracing> {
  // Loaded only when on: off costs no module load.
  const api = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  const { Resource, detectResourcesSync, envDetectorSync } = await import('@opentelemetry/resources');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const temporalOtel = await import('@temporalio/interceptors-opentelemetry');

  // The later wins.
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': settings.serviceName }))
    .merge(detectResourcesSync({ detectors: [envDetectorSync] }));
  const batch = { scheduledDelayMillis: settings.batchDelayMs ?? 1_000 };
  // No URL: the exporter reads the OTEL_EXPORTER_OTLP_* variables itself.
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

/** A bundle with the workflow interceptors, run with tracing off (one built without its twin): spans dropped here. */
export const DROPPED_WORKFLOW_SPANS: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined, callDuringReplay: false } },
};
