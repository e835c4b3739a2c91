// No-op stand-ins for claim, send and record. They return what the real ones return, so the payloads that
// travel through Temporal have the same size as the product's.
import { activityInfo } from '@temporalio/activity';

const SETTINGS = {
  unknownOutcomePolicy: 'assume-sent',
  sendTimeoutMs: 60_000,
  maxSendAttempts: 8,
  retryInitialIntervalMs: 10_000,
  retryMaxIntervalMs: 600_000,
} as const;

export function createFloorActivities() {
  return {
    async claimOrderMail(_input: { orderId: string }) {
      const info = activityInfo();
      const execution = info.workflowExecution;
      return {
        kind: 'claimed' as const,
        attempt: 1,
        claimToken: `${info.namespace}/${execution?.workflowId ?? ''}/${execution?.runId ?? ''}`,
        how: 'first-claim' as const,
        settings: SETTINGS,
      };
    },
    async sendOrderMail(_input: { orderId: string; claimToken: string; attempt: number }) {
      return { outcome: 'accepted' as const, httpStatus: 202, providerMessageId: 'sbx_0000000000' };
    },
    async recordOrderMailOutcome(_input: Record<string, unknown>) {
      return {
        kind: 'recorded' as const,
        state: 'sent' as const,
        outcome: 'accepted' as const,
        alreadyRecorded: false,
        recordedAtMs: Date.now(),
      };
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
