// The card's activities over the product's own modules: its pool, loadOrderForMail, the mail's rendering and
// the HTTP transport with its pool. What they leave out against src/activities: docs/benchmarks.md, "card".
import { activityInfo } from '@temporalio/activity';
import type { Database } from '../../../src/db/pool';
import { loadOrderForMail } from '../../../src/db/orders';
import { renderConfirmationMail, type MailIdentity } from '../../../src/mail/confirmationMail';
import type { MailTemplates } from '../../../src/mail/template/mailTemplates';
import type { MailTransport } from '../../../src/mail/types';
import type { SendResult } from '../../../src/shared/mailOutcome';
import { cardClaim, cardRecord, type CardOutcome } from './statements';

export interface CardDependencies {
  db: Database;
  mail: MailTransport;
  mailIdentity: MailIdentity;
  mailTemplates: MailTemplates;
  /** The product's send timeout (SEND_ACTIVITY_TIMEOUT_MS and its default), handed to the workflow. */
  sendTimeoutMs: number;
}

export function createCardActivities(deps: CardDependencies) {
  return {
    async claimCardMail(input: { orderId: string }) {
      const execution = activityInfo().workflowExecution;
      // The run's id: a retried claim of the same run is told apart from another run's by nothing else.
      const claimToken = `card/${execution?.workflowId ?? ''}/${execution?.runId ?? ''}`;
      const claimed = await cardClaim(deps.db, input.orderId, claimToken);
      return claimed === null
        ? { kind: 'not-claimed' as const }
        : {
            kind: 'claimed' as const,
            attempt: claimed.attempt,
            claimToken,
            sendTimeoutMs: deps.sendTimeoutMs,
          };
    },
    /** Never throws for what the provider said: the workflow branches on the outcome. */
    async sendCardMail(input: { orderId: string }): Promise<SendResult> {
      const order = await loadOrderForMail(deps.db, input.orderId);
      if (order === null) throw new Error(`order ${input.orderId} not found`);
      return deps.mail.send(renderConfirmationMail(order, deps.mailIdentity, deps.mailTemplates));
    },
    async recordCardMail(input: { orderId: string; claimToken: string; outcome: CardOutcome }) {
      return {
        recorded: await cardRecord(deps.db, input.orderId, input.claimToken, input.outcome),
      };
    },
  };
}

export type CardActivities = ReturnType<typeof createCardActivities>;
