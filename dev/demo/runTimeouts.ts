// The run's send timeout, apart from workerEnvironment.ts so the mail target can read it without a circle.
/** The workers' SEND_ACTIVITY_TIMEOUT_MS; also the margin a --lookup-reorder run is judged by (report). */
export const RUN_SEND_TIMEOUT_MS = 8_000;
