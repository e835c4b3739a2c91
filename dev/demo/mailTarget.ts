// Where the runner's workers send: the HTTP Mail API sandbox (`--transport http`, the default) or the SMTP fault
// sandbox (`--transport smtp`), behind one face, so the runner, its chaos and its report do not care which.
// Both relay what they accepted to the inbox when one runs, and both count what they accepted themselves:
// the report's facts come from the sandbox, the inbox is for people to look at (and is checked against it).
import { startMailSandbox, DEFAULT_SANDBOX_API_KEY } from '../../packages/sandbox/src/mailSandbox';
import type { Fault } from '../../packages/sandbox/src/faults';
import { LOOKUP_LIE_KINDS } from '../../packages/sandbox/src/lookupLies';
import type { LookupRecord } from '../../packages/sandbox/src/lookups';
import type { RelayTarget } from '../../packages/sandbox/src/relayToInbox';
import type { WebhookDeliveryRecord } from '../../packages/sandbox/src/webhooks';
import { startSmtpSandbox, type SmtpTransactionRecord } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { faultRates, HANG_MS, type AnswerTimes } from './profiles';
import type { FaultMix, MailTransportName } from './runOptions';
import type { LiesTold, MessageFact, RequestFact, VerificationActivity, WebhookFacts } from './report/facts';
import { smtpFaultRates } from './smtpFaultRates';
import { isWitnessProbe, startVerificationParts } from './verificationTarget';
import { dropEverySend, type OutageWindow } from './sendOutage';
import { needsWebhookReceiver, type VerificationRunOptions } from './verificationOptions';
import { RUN_SEND_TIMEOUT_MS } from './runTimeouts';

export interface DemoMailTarget {
  transport: MailTransportName;
  /** Where it listens, for people: http://127.0.0.1:PORT or smtp://127.0.0.1:PORT. */
  address: string;
  /** Where to look at what it received (the HTTP sandbox's message list), or null. */
  messagesUrl: string | null;
  /** The worker variables (src/config/loadConfig.ts) that send to it. */
  workerEnv: Record<string, string>;
  /** Every message it accepted, whatever the worker heard back. */
  messages(): MessageFact[];
  /** Every send that reached it, with the fault it applied. */
  requests(): RequestFact[];
  refuseConnectionsFor(ms: number): Promise<void>;
  /** Stops the webhook receiver for `ms`, then starts it again on its port (nothing without a receiver). */
  receiverOutage(ms: number): Promise<void>;
  whenListening(): Promise<void>;
  /** Resolves once every relay to the inbox started so far has finished. */
  relaysSettled(): Promise<void>;
  /** The provider the HTTP sandbox plays for the workers (null over SMTP), and whether they verify with it. */
  provider: string | null;
  verifies: boolean;
  /** What the verification path did at the sandbox: lookups, webhook postings. */
  verificationActivity(): VerificationActivity;
  /**
   * Under --lying-provider with a provider that posts webhooks: once every posting planned has been made, what
   * the sandbox posted and the receiver answered (the rows are read from the database by the runner); else null.
   */
  webhookPostings(): Promise<Omit<WebhookFacts, 'rows'> | null>;
  /** --send-outage: drops every send for `ms`, then heals (the HTTP sandbox only). */
  dropEverySendFor?(ms: number, say: (line: string) => void, signal?: AbortSignal): Promise<OutageWindow>;
  /** From now on every send is taken at once, without a fault (the HTTP sandbox only). */
  endFaults?(): void;
  close(): Promise<void>;
}

export async function startMailTarget(options: {
  transport: MailTransportName;
  faults: FaultMix;
  /** Null: the usual slow and hang answers (profiles.ts). */
  answerTimes?: AnswerTimes | null;
  seed: number;
  relayTo: RelayTarget | null;
  verification: VerificationRunOptions;
  /** The run's database, where the webhook receiver (if the provider has webhooks) stores events. */
  databaseUrl: string;
}): Promise<DemoMailTarget> {
  const relay = options.relayTo === null ? {} : { relayTo: options.relayTo };
  if (options.transport === 'smtp') {
    const sandbox = await startSmtpSandbox({
      rates: smtpFaultRates(options.faults),
      seed: options.seed,
      ...relay,
    });
    return {
      transport: 'smtp',
      address: `smtp://${sandbox.host}:${sandbox.port}`,
      messagesUrl: null,
      workerEnv: {
        MAIL_PROVIDER: 'smtp',
        SMTP_HOST: sandbox.host,
        SMTP_PORT: String(sandbox.port),
        // Plain SMTP on loopback, no AUTH: the sandbox offers neither TLS nor (here) credentials.
        SMTP_SECURE: 'false',
        SMTP_STARTTLS: 'off',
      },
      // The queue id is what the worker records as the provider message id. The transport names the order in
      // the envelope and in X-Order-Id, so a message without one cannot be this service's and is left out.
      messages: () =>
        sandbox
          .messages()
          .filter((message) => message.orderId !== null)
          .map((message) => ({
            orderId: message.orderId!,
            id: message.queueId,
            receivedAt: message.receivedAt,
          })),
      requests: () => sandbox.transactions().map(smtpRequestFact),
      refuseConnectionsFor: (ms) => sandbox.refuseConnectionsFor(ms),
      receiverOutage: async () => undefined,
      whenListening: () => sandbox.whenListening(),
      relaysSettled: () => sandbox.relaysSettled(),
      provider: null,
      verifies: false,
      verificationActivity: () => ({
        provider: null,
        verifies: false,
        lookups: 0,
        lookupFaults: 0,
        webhookPosts: 0,
        webhookDuplicates: 0,
      }),
      webhookPostings: async () => null,
      close: () => sandbox.close(),
    };
  }
  const sandbox = await startMailSandbox({
    faultPlan: { rates: faultRates(options.faults, options.answerTimes ?? undefined), seed: options.seed },
    ...relay,
  });
  const { provider } = options.verification;
  const verification = await startVerificationParts(sandbox, options.verification, options.databaseUrl).catch(
    async (error: unknown) => {
      await sandbox.close();
      throw error;
    },
  );
  return {
    transport: 'http',
    address: sandbox.url,
    messagesUrl: `${sandbox.url}/_sandbox/messages?orderId=1`,
    workerEnv: {
      MAIL_API_BASE_URL: sandbox.url,
      MAIL_API_KEY: DEFAULT_SANDBOX_API_KEY,
      ...verification.workerEnv,
    },
    // Witness probes are no customer's mail: the report reads them from their table (order_mail_witness_probes).
    messages: () =>
      sandbox
        .messages()
        .filter((message) => !isWitnessProbe(message.orderId))
        .map((message) => ({
          orderId: message.orderId,
          id: message.id,
          receivedAt: message.receivedAt,
          sendKey: message.sendKey ?? null,
        })),
    // The sends to the provider's endpoint; its lookups are counted apart (verification.lookups()).
    requests: () =>
      sandbox
        .requests()
        .filter((request) => request.provider === provider && !isWitnessProbe(request.orderId))
        .map((request) => ({
          orderId: request.orderId,
          fault: request.fault && describeFault(request.fault, options.answerTimes?.hangMs ?? HANG_MS),
        })),
    refuseConnectionsFor: (ms) => sandbox.refuseConnectionsFor(ms),
    dropEverySendFor: (ms, say, signal) => dropEverySend(sandbox, ms, say, signal),
    endFaults: () => sandbox.setFaultPlan({ rates: [], seed: options.seed }),
    receiverOutage: (ms) => verification.receiverOutage(ms),
    whenListening: () => sandbox.whenListening(),
    relaysSettled: () => sandbox.relaysSettled(),
    provider,
    verifies: verification.verifies,
    verificationActivity: () => {
      const lookups = sandbox.lookups();
      const reorder = options.verification.lookupReorder;
      const posts = sandbox.webhookDeliveries();
      return {
        provider,
        verifies: verification.verifies,
        lookups: lookups.length,
        lookupFaults: lookups.filter((lookup) => lookup.fault !== null).length,
        webhookPosts: posts.length,
        webhookDuplicates: posts.filter((post) => post.duplicate && post.attempt === 1).length,
        ...(options.verification.lyingProvider ? { lies: liesTold(lookups) } : {}),
        ...(reorder === null || reorder.holdMs === 0 || !verification.verifies
          ? {}
          : {
              reorder: {
                provider,
                ...reorder,
                settleDelayMs: options.verification.settleDelayMs,
                sendTimeoutMs: RUN_SEND_TIMEOUT_MS,
                lookupsHiding: lookups.filter((lookup) => (lookup.reorder?.hidden ?? 0) > 0).length,
                lookupsOutOfOrder: lookups.filter((lookup) => lookup.reorder?.outOfOrder === true).length,
                watermarkPastHidden: lookups.filter((lookup) => lookup.reorder?.watermarkPastHidden === true)
                  .length,
              },
            }),
      };
    },
    webhookPostings: async () => {
      if (!options.verification.lyingProvider || !needsWebhookReceiver(options.verification)) return null;
      await sandbox.webhooksSettled();
      const deliveries = sandbox.webhookDeliveries();
      const taken = (status: number | 'failed') =>
        typeof status === 'number' && status >= 200 && status < 300;
      const accepted = deliveries.filter((post) => taken(post.status));
      // A witness probe's events are posted too; the receiver takes them and stores nothing (no order's), so
      // only the orders' events are expected stored and judged as genuine evidence.
      const ofOrders = deliveries.filter((post) => !isWitnessProbe(post.orderId));
      // A 409 says the receiver already has the posting (stored with its events in one transaction): a retry
      // or duplicate of one it took, perhaps after an answer that was lost.
      const acceptedIds = new Set(
        ofOrders.filter((post) => taken(post.status) || post.status === 409).map((post) => post.eventId),
      );
      return {
        lies: sandbox.webhookLies(),
        liePostings: sandbox.webhookLiePostings(),
        acceptedGenuineEventIds: [...acceptedIds],
        acceptedGenuinePostings: accepted.length,
        genuine: genuineDeliveryFacts(ofOrders, acceptedIds),
      };
    },
    close: async () => {
      await sandbox.close();
      await verification.close();
    },
  };
}

/**
 * The sandbox's genuine events as the receiver answered them: refused (a 4xx, which the provider does not retry:
 * the event is lost), never taken (retries ran out or were still due), and the latest a retry was taken.
 */
function genuineDeliveryFacts(
  deliveries: WebhookDeliveryRecord[],
  acceptedIds: Set<string>,
): NonNullable<WebhookFacts['genuine']> {
  const events = new Set(deliveries.map((post) => post.eventId));
  const refused = new Set(
    deliveries
      .filter(
        (post) =>
          !acceptedIds.has(post.eventId) &&
          typeof post.status === 'number' &&
          post.status >= 400 &&
          post.status < 500 &&
          post.status !== 429,
      )
      .map((post) => post.eventId),
  );
  let latestTakenMs = 0;
  let retried = 0;
  for (const post of deliveries) {
    if (post.attempt > 1) retried += 1;
    if (typeof post.status === 'number' && post.status >= 200 && post.status < 300)
      latestTakenMs = Math.max(latestTakenMs, post.lateByMs);
  }
  return {
    events: events.size,
    refused: refused.size,
    neverTaken: [...events].filter((id) => !acceptedIds.has(id) && !refused.has(id)).length,
    retries: retried,
    latestTakenMs,
  };
}

/** A transaction that ended at a fault, named as the report lists faults; null for a plain 250. */
function smtpRequestFact(record: SmtpTransactionRecord): RequestFact {
  if (record.fault === null) return { orderId: record.orderId, fault: null };
  const fault = record.fault === 'reply' ? `${String(record.result)} at ${record.at}` : record.fault;
  return { orderId: record.orderId, fault };
}

/** An HTTP sandbox fault, named as the report lists it. */
function describeFault(fault: Fault, hangMs: number): string {
  switch (fault.kind) {
    case 'status':
      return `${fault.status}${fault.record === true ? ' after processing' : ''}`;
    case 'accept-then-hang':
      // --slow holds the answer too, but answers before the client gives up.
      return fault.ms !== undefined && fault.ms < hangMs ? 'slow' : 'hang';
    default:
      return fault.kind;
  }
}

/** The lies the lookups told, by kind, with the orders they were about (dev/demo/report/lieReport.ts). */
function liesTold(lookups: LookupRecord[]): LiesTold {
  const told: LiesTold = Object.fromEntries(
    LOOKUP_LIE_KINDS.map((kind) => [kind, { told: 0, orderIds: [] }]),
  );
  for (const lookup of lookups) {
    if (lookup.lie === null) continue;
    const entry = told[lookup.lie]!;
    entry.told += 1;
    if (lookup.orderId !== null) entry.orderIds.push(lookup.orderId);
  }
  return told;
}
