// The facts a run's report is computed from, one record each: a log row, an attempt's audit row, a message the
// sandbox received, a request it answered, a workflow's runs, what the inbox holds, what the chaos and the
// operators did, and RunFacts, which holds them all. Types only: readFacts.ts gathers them after a run (with
// inbox.ts and taskRedeliveries.ts), report.ts summarizes them, invariants.ts judges them.
import type { LogOutcome, MailOutcome, UnknownOutcomePolicy } from '../../../src/shared/mailOutcome';
import type { WebhookLieCount, WebhookLiePosting } from '../../../packages/sandbox/src/webhookLies';
import type { ClusterChaosCounts } from '../clusterChaos';
import type { ActOutcome, OperatorActName } from '../operatorTools';
import type { SendOutageFacts } from '../sendOutage';
import type { SweepFacts } from '../sweep';
import type { ProviderChangeInput } from './providerChangeReport';

export interface LogRowFact {
  orderId: string;
  state: 'sending' | 'sent' | 'failed';
  /** 'resolved' when an operator settled the row by their word. */
  outcome: LogOutcome | null;
  attempts: number;
  providerMessageId: string | null;
  /** Whether the row's current attempt passed the dispatch fence (absent: not known, taken as no). */
  dispatched?: boolean;
}

/** How an unknown outcome was verified: decided by a lookup or a webhook, tried in vain, or not at all. */
export type VerificationFact = 'lookup' | 'webhook' | 'inconclusive' | null;

export interface AttemptFact {
  orderId: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownOutcomePolicy | null;
  dispatched: boolean;
  /** The provider's message id of an accepted attempt (absent: not known, counted by number instead). */
  providerMessageId?: string | null;
  /** How an unknown outcome was verified with the provider (lookup, webhook, inconclusive), or null. */
  verification: VerificationFact;
  /** When the attempt was settled, ISO 8601 (Postgres's clock, the same machine's as the sandbox's). */
  finishedAt: string;
  /** Operator re-sends before this attempt: which send (idempotency and send key) it was part of. */
  resendCount?: number;
}

export interface MessageFact {
  orderId: string;
  id: string;
  /** When the provider took it, ISO 8601. */
  receivedAt: string;
  /** The send key it carried (HTTP); null where none is known (SMTP). */
  sendKey?: string | null;
  /** Which provider's sandbox received it (--failover); absent with one provider. */
  provider?: string;
}

/** How the sandbox ended one request to its mail API, and the fault it applied (null for none). */
export interface RequestFact {
  orderId: string | null;
  fault: string | null;
}

/** One switch of the upgrade run's current version: the open runs at that moment, per build and state. */
export interface UpgradeSwitch {
  /** The version made current or ramping, "<deployment>:<build>". */
  to: string;
  /** 'current': every new run goes to `to`; 'ramping': `percentage` of new runs do, the rest to the current. */
  kind: 'current' | 'ramping';
  /** The ramp's share of new runs, percent (100 for a switch of the current version). */
  percentage: number;
  atMs: number;
  /** Open mail runs per build ('unversioned', 'n', 'n1') and OrderMailState (visibility). */
  openByBuild: Record<string, Record<string, number>>;
  /** The rows at that moment: claimed and not dispatched, dispatched and not recorded, not sent awaiting a retry. */
  rows: { claimed: number; midSend: number; notSent: number };
  /** The build being left ('unversioned', 'n', 'n1'), and where its open runs were just before the switch. */
  from: string;
  oldRuns: OldRunsAtSwitch;
  /**
   * At the rollback, the open runs of the build it returns to (N), placed the same way: runs of both versions
   * are open then, and either may be called the old one. Null at the other switches.
   */
  returnedTo: { build: string; runs: OldRunsAtSwitch } | null;
  /** The build made current: its workers confirmed polling before the switch, and how long they took. */
  polling: BuildPolling;
}

/** How the build a switch made current was confirmed polling before the switch. */
export interface BuildPolling {
  build: string;
  /** From launching the build's workers to every one of them polling (measured once per build). */
  workersStartedInMs: number;
  /**
   * When the version was confirmed polling (a worker of the build polls, and describe-version lists the run's
   * task queue for workflow and activity tasks), ms after the first start.
   */
  confirmedAtMs: number;
  /** How long the switch waited for that confirmation past the moment it was due. */
  waitedMs: number;
}

/**
 * The open runs of the build being left, placed by their rows: claimed (a 'sending' row not dispatched),
 * mid-send (dispatched, the send activity still open), waiting out a settle delay (dispatched, the send came
 * back without an answer: the run waits before asking the provider, or asks), in a not-sent backoff ('failed'
 * / 'not_sent', the run waiting to claim again); `other`: no row yet, or a row settled as the run closes.
 */
export interface OldRunsAtSwitch {
  open: number;
  claimed: number;
  midSend: number;
  settleDelay: number;
  notSentBackoff: number;
  other: number;
  /** How long counting them took (listing, the rows, one describe per dispatched row). */
  countedInMs: number;
}

/** The upgrade run (--upgrade-at): 2.0 → N → N+1 ramping → N+1 → back to N (dev/demo/upgradeAct.ts). */
export interface UpgradeFacts {
  deploymentName: string;
  /** False: --upgrade-plain-load, the chaos profile's load; true: the shaped load (dev/demo/upgradeLoad.ts). */
  shapedLoad: boolean;
  /**
   * How long 2.0's open runs may go without one closing or moving to N before the rollout gives up: twice the
   * longest a run waits for its next workflow task, plus the time N's workers took to start (the machine's load).
   */
  drainStallBoundMs: number;
  /** --upgrade-min-per-state: the least old-build runs asked in each place at each switch (0: not asked). */
  minPerState: number;
  switches: UpgradeSwitch[];
  /** When no unversioned run was open any more, after N became current; null if never seen. */
  unversionedDrainedAtMs: number | null;
  /** Mail runs per build, closed ones included. */
  runsByBuild: Record<string, number>;
  /** Workers of builds N and N+1 killed by the run (the unversioned ones are the chaos section's). */
  killsByBuild: Record<string, number>;
  /** Orders whose history holds a workflow task failed for non-determinism. */
  nondeterminismFailures: string[];
  /** Orders whose run went from one build to another, but 2.0's runs moving to N (which replays them). */
  crossedBuilds: string[];
  /** 2.0's runs that moved to N at their next workflow task, as Temporal moves unversioned runs. */
  movedFromUnversioned: number;
  historiesUnreadable: number;
  failure: string | null;
  /** When the faults ended (ms after the first start): every switch made and every order started; null if never. */
  faultsEndedAtMs: number | null;
}

/** A run's hold (--hold-at): when it was set and lifted (ms after the first start), and what reached the provider. */
export interface SendHoldFacts {
  holdAskedAtMs: number | null;
  /** When `hold` returned: from here on, no request may reach the provider until resume. */
  heldAtMs: number | null;
  holdWaitedMs: number | null;
  /** Orders whose attempt was still dispatched and unrecorded when hold stopped waiting. */
  inFlightAtHold: string[];
  resumeAskedAtMs: number | null;
  resumedAtMs: number | null;
  /**
   * Send requests the sandbox received from hold's return until resume was asked for, but those of the attempts
   * hold listed as still in flight (dispatched before it): must be 0.
   */
  requestsDuringHold: number;
  /** Requests in that time of the attempts hold listed as dispatched before it and still in flight. */
  requestsOfListedInFlight: number;
  /** Lookups the sandbox answered in the same time: verification goes on under a hold. */
  lookupsDuringHold: number;
  heldOrdersAtResume: number;
  signalled: number;
  /** Why the hold or the resume could not be made; null when both were. */
  failure: string | null;
}

/** One run of an order's workflow, as Temporal lists it. */
export interface RunFact {
  runId: string;
  status: string;
  startedAt: string;
  /** Null while the run is open. */
  closedAt: string | null;
}

export interface WorkflowFacts {
  /** Workflow id → status name (COMPLETED, FAILED, RUNNING, TERMINATED, …) of its newest run. */
  statuses: Record<string, string>;
  /** Workflow id → all its runs, newest first (a reset leaves the run it replaced TERMINATED). */
  runs: Record<string, RunFact[]>;
}

/** Under --lying-provider: what the sandbox said it told, per kind: how many lookups lied, about which orders. */
export type LiesTold = Record<string, { told: number; orderIds: string[] }>;

export interface VerificationActivity {
  provider: string | null;
  verifies: boolean;
  /** Lookups the sandbox answered, and how many of them it faulted on purpose. */
  lookups: number;
  lookupFaults: number;
  /** Webhook postings the sandbox made (duplicates and retries included), of which duplicates. */
  webhookPosts: number;
  webhookDuplicates: number;
  /** Under --lying-provider: the lies the sandbox's lookups told, by kind (lieReport.ts). */
  lies?: LiesTold;
  /** Under --lookup-reorder: what the reordering index did (scenarioInvariants.ts, lookupReorderInvariant). */
  reorder?: LookupReorderFacts;
}

/** A --lookup-reorder run: the sandbox's plan (its lookupReorder.ts), the workers' timing, the counts. */
export interface LookupReorderFacts {
  provider: string;
  holdMs: number;
  share: number;
  watermark: 'honest' | 'absent' | 'lying';
  /** The workers' MAIL_VERIFY_SETTLE_DELAY_MS (Mailgun's threshold as configured) and send timeout. */
  settleDelayMs: number;
  sendTimeoutMs: number;
  /** Lookups answered while a held message was hidden, and of those, the ones that showed a later message. */
  lookupsHiding: number;
  lookupsOutOfOrder: number;
  /** Generic answers whose watermark was at or past a message they hid. */
  watermarkPastHidden: number;
}

/** Under --lying-provider with a provider that posts webhooks: what the run's webhook path did and left behind. */
export interface WebhookFacts {
  /** Per kind of lie, its postings by the receiver's answer (the sandbox's own count). */
  lies: Record<string, WebhookLieCount>;
  /** Every posting a lie made (a replay's genuine first posting included). */
  liePostings: WebhookLiePosting[];
  /** Event ids of the sandbox's genuine postings the receiver answered 2xx (retries and duplicates included). */
  acceptedGenuineEventIds: string[];
  /** Genuine postings answered 2xx. */
  acceptedGenuinePostings: number;
  /**
   * The genuine events (each with its retries): how many there were, refused with a 4xx (lost: a provider does
   * not retry one), never taken (retries ran out), postings that were retries, and how late after its first
   * posting the latest taken one was. Absent in reports written before it was counted.
   */
  genuine?: { events: number; refused: number; neverTaken: number; retries: number; latestTakenMs: number };
  /** The receiver's tables after the run. */
  rows: {
    /** provider_event_id of every row of order_mail_provider_events the run's receiver wrote. */
    storedEventIds: string[];
    /** Rows of order_mail_webhook_deliveries (replay tokens; old ones are forgotten, so at most the postings taken). */
    deliveryRows: number;
    /** The tokens of refused or failed lie postings that are in order_mail_webhook_deliveries: none, if all is right. */
    refusedTokensStored: string[];
  };
}

/** What the inbox (MailDev) holds after the run. */
export interface InboxFacts {
  webUrl: string;
  /** Order id (the X-Order-Id header both sandboxes relay) → messages in the inbox. */
  messagesPerOrder: Record<string, number>;
  /** Messages without an X-Order-Id header: none are expected. */
  withoutOrderId: number;
  /** Why the inbox could not be read, or null when it was. */
  unreadable: string | null;
}

export interface ChaosCounts {
  workerKills: number;
  workerRestarts: number;
  /** Workers that exited without being killed (started while Temporal or Postgres was down), restarted. */
  workerExits: number;
  postgresRestarts: number;
  temporalRestarts: number;
  refusedWindows: number;
}

/** The workflow and activity tasks the server handed out again, as the histories record them (taskRedeliveries.ts). */
export interface TaskRedeliveries {
  workflowsRead: number;
  /** Histories that could not be read (their count is missing from the figures below). */
  unreadable: number;
  workflowTasks: {
    scheduled: number;
    timedOutStartToClose: number;
    timedOutScheduleToStart: number;
    /** Failed workflow tasks by cause (e.g. UNHANDLED_COMMAND, RESET_WORKFLOW). */
    failed: Record<string, number>;
  };
  activityTasks: {
    /** Activity attempts started (the last attempt of each scheduled activity is what a history records). */
    scheduled: number;
    /** Attempts after the first, by activity type. */
    retriesByType: Record<string, number>;
    retries: number;
    /** Retries whose previous attempt timed out (the task was redelivered), by the timeout that ended it. */
    retriedAfterTimeout: { startToClose: number; scheduleToStart: number; heartbeat: number };
    /** Activities that timed out for good (no attempt left). */
    timedOut: number;
  };
}

/** A --cluster run: the acts on the cluster's hosts, the tasks the server redelivered, the shards at the end. */
export interface ClusterFacts {
  acts: ClusterChaosCounts;
  redeliveries: TaskRedeliveries;
  historyShards: number;
  /** History host → shards it owns once the run is over. */
  shardsAtEnd: Record<string, number>;
}

export interface StartCounts {
  clientProcesses: number;
  startCalls: number;
  started: number;
  alreadyStarted: number;
  retriedCalls: number;
}

/** One act of the operator-chaos run's operator (operators.ts), as its log keeps it. */
export interface OperatorActRecord {
  act: OperatorActName;
  orderId: string;
  runId: string | null;
  /** When the act was made (ISO), on this machine's clock, which Postgres and Temporal share here. */
  at: string;
  result: ActOutcome['result'];
  /** The refusal's code, or what failed; null when done. */
  detail: string | null;
  /** A refusal's own words (Temporal's or the ops CLI's), for the run's operator-acts.json. */
  message?: string;
  /** A resolve's view of the row before it (from the act's audit row), to tell a resolve of a send in flight. */
  rowBefore?: { state: string; dispatchedAt: string | null; claimToken: string } | null;
  /** Part of a deliberate re-send: the resolve --as failed and the retry that follows it. */
  resend?: boolean;
  /** For an activity act: which activity (the send), so a pause can be matched with its unpause. */
  activityId?: string;
}

/** In a run with operators (--operators): what they did, every run of every order, and the sweeps. */
export interface OperatorFacts {
  acts: OperatorActRecord[];
  /** Every run of every order's workflow: order id → its runs, newest first. */
  runs: Record<string, RunFact[]>;
  sweeps: SweepFacts;
}

/** One attempt as order_mail_attempts records it, with the provider it went to and why (--failover). */
export interface FailoverAttemptFact {
  orderId: string;
  attempt: number;
  resendCount: number;
  provider: string | null;
  choice: string | null;
  outcome: string;
  httpStatus: number | null;
  verification: string | null;
  error: string | null;
}

/** A --failover run: the primary, its outage, and every attempt with its provider. */
export interface FailoverFacts {
  primary: string;
  outage: { atMs: number; forMs: number };
  attempts: FailoverAttemptFact[];
}

export interface RunFacts {
  profile: string;
  /** How the workers sent: the HTTP Mail API or SMTP. */
  transport: string;
  policy: UnknownOutcomePolicy;
  /** The provider the sandbox played, whether the workers verified unknown outcomes with it, and how. */
  verification: VerificationActivity;
  orderIds: string[];
  rows: LogRowFact[];
  attempts: AttemptFact[];
  messages: MessageFact[];
  requests: RequestFact[];
  /** Workflow id → status name as Temporal lists it (COMPLETED, FAILED, RUNNING, …). */
  workflows: Record<string, string>;
  /** What the inbox (MailDev) holds, when the run had one. */
  inbox: InboxFacts | null;
  chaos: ChaosCounts;
  starts: StartCounts;
  workers: number;
  elapsedMs: number;
  /** What an operator did, in a run with operators (--operators); absent or null otherwise. */
  operators?: OperatorFacts | null;
  /** Under --lying-provider with a provider that posts webhooks: the webhook lies and the receiver's rows. */
  webhooks?: WebhookFacts | null;
  /** The cluster and what was done to it, in a --cluster run; absent or null otherwise. */
  cluster?: ClusterFacts | null;
  /** The providers' attempts in a --failover run; absent or null otherwise. */
  failover?: FailoverFacts | null;
  /** The hold of a --hold-at run; absent or null otherwise. */
  sendHold?: SendHoldFacts | null;
  upgrade?: UpgradeFacts | null;
  /** A --send-outage run: the window, the witness probes, how each unknown was answered (sendOutage.ts). */
  sendOutage?: SendOutageFacts | null;
  /** A --provider-change run: the drain and the key rotation, and the ops listing (readProviderChange.ts). */
  providerChange?: ProviderChangeInput | null;
}
