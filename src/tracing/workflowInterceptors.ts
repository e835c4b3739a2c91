// Workflow-side interceptors, bundled with the workflow code (WORKFLOW_INTERCEPTOR_MODULES): the workflow's
// span and the spans of the activities it schedules, each activity's headers carrying the trace context.
// Their spans leave the sandbox through the `exporter` sink (src/tracing/tracing.ts). Deterministic: ids
// come from the sandbox's seeded Math.random, times from its workflow clock.
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
