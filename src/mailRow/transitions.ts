// The row's state machine as data (docs/design.md §3, §4): each transition's from-states, to-state, fence and
// who may run it (`mayRun`, what the grants and the trigger permit: test/mailRow/whoMayRun.test.ts).

/** 'none': the order has no row yet. */
export type MailRowState = 'none' | 'sending' | 'sent' | 'failed';

/** The role groups (src/db/roles.ts); the case study's old workers are in none of them. */
export type RoleGroup = 'worker' | 'operator' | 'migrator' | 'caseStudyWriter';

export const ROLE_GROUPS = [
  'worker',
  'operator',
  'migrator',
  'caseStudyWriter',
] as const satisfies readonly RoleGroup[];

export interface Transition {
  from: readonly MailRowState[];
  /** The states it may leave the row in; 'unchanged': the row stays as it was, only audit rows change. */
  to: readonly MailRowState[] | 'unchanged';
  fence: {
    words: string;
    /** The WHERE's clauses as the statement states them (`:name` is a parameter). */
    where: readonly string[];
  };
  /** The role groups the database lets run the statement with its effect (grants and trigger). */
  mayRun: readonly RoleGroup[];
  /** Who issues it in this product. */
  issuedBy: string;
  /** False: the transition writes neither table (the row moves by what it causes elsewhere). */
  writes: boolean;
}

const AS_READ = [
  'log.order_id = :orderId',
  'log.state = :seenState',
  'log.claim_token = :seenClaimToken',
  'log.attempts = :seenAttempts',
  'log.resend_count = :seenResendCount',
  '(log.dispatched_at IS NOT NULL) = :seenDispatched',
] as const;
const ISSUED_BEFORE = 'log.claim_issued_at < :issuedAt::timestamptz';
const SECOND_LOOK_FENCE = [
  "log.state = 'sent'",
  "log.outcome = 'unknown'",
  "log.unknown_policy = 'assume-sent'",
  "log.verification = 'inconclusive'",
  'log.second_look IS NULL',
  'log.dispatched_at IS NOT NULL',
  'log.dispatch_provider IS NOT NULL',
  'log.dispatch_origin IS NOT NULL',
  'log.dispatch_send_key IS NOT NULL',
  "log.claim_token NOT LIKE 'legacy:%'",
  "NOT EXISTS (a 'legacy:%' attempt of the order)",
  'now() < log.dispatched_at + :boundMs milliseconds',
  'log.order_id = :orderId AND log.claim_token = :claimToken AND log.attempts = :attempts',
] as const;

/** Every group that order_mail_log's trigger counts as this service (migration 0050). */
const SERVICE = ['worker', 'operator', 'migrator'] as const;

export const TRANSITIONS = {
  firstClaim: {
    from: ['none'],
    to: ['sending'],
    fence: {
      words: "the order has no row yet (the primary key), and the shop's contract view shows the order",
      where: [
        'ON CONFLICT (order_id) DO NOTHING',
        'EXISTS (SELECT 1 FROM order_mail_source.orders_for_mail …)',
      ],
    },
    mayRun: ['worker', 'migrator'],
    issuedBy: 'the claim activity',
    writes: true,
  },
  reclaimFailed: {
    from: ['failed'],
    to: ['sending'],
    fence: {
      words: 'the row as read, and this claim issued later than the last',
      where: [...AS_READ, "log.state = 'failed'", ISSUED_BEFORE],
    },
    mayRun: SERVICE,
    issuedBy: 'the claim activity',
    writes: true,
  },
  takeOverUndispatched: {
    from: ['sending'],
    to: ['sending'],
    fence: {
      words: 'an orphan as read, never dispatched, and this claim issued later',
      where: [...AS_READ, "log.state = 'sending'", 'log.dispatched_at IS NULL', ISSUED_BEFORE],
    },
    mayRun: SERVICE,
    issuedBy: 'the claim activity',
    writes: true,
  },
  markDispatched: {
    from: ['sending'],
    to: ['sending'],
    fence: {
      words:
        'the dispatch fence: this attempt holds the claim, has not dispatched, and no hold covers its provider',
      where: [
        'order_id = :orderId',
        'claim_token = :claimToken',
        'attempts = :attempt',
        "state = 'sending'",
        'dispatched_at IS NULL',
        'provider IS NOT DISTINCT FROM :provider::text',
        "NOT EXISTS (SELECT 1 FROM order_mail_send_holds AS hold WHERE hold.scope = '*' OR hold.scope = :provider::text)",
      ],
    },
    mayRun: SERVICE,
    issuedBy: 'the send activity, before its request leaves',
    writes: true,
  },
  record: {
    from: ['sending'],
    to: ['sent', 'failed'],
    fence: {
      words: 'this attempt still holds the claim, dispatched or not as the decision assumed',
      where: [
        'log.order_id = :orderId',
        'log.claim_token = :claimToken',
        'log.attempts = :attempt',
        "log.state = 'sending'",
        '(log.dispatched_at IS NOT NULL) = :expectDispatched, or TRUE',
      ],
    },
    mayRun: SERVICE,
    issuedBy: 'the record activity',
    writes: true,
  },
  recordAfterClaimLost: {
    from: ['sending', 'sent', 'failed'],
    to: 'unchanged',
    fence: {
      words:
        "someone else settled the attempt and wrote no audit row for it: the answer becomes the attempt's own",
      where: [
        'log.order_id = :orderId',
        "log.attempts > :attempt, or log.attempts = :attempt AND log.state <> 'sending'",
        'ON CONFLICT (order_id, attempt) DO NOTHING',
      ],
    },
    mayRun: SERVICE,
    issuedBy: 'the record activity, when its claim was lost',
    writes: true,
  },
  settleDispatchedOrphan: {
    from: ['sending'],
    to: ['sent', 'failed'],
    fence: {
      words: 'a dispatched orphan as read; for a later claim, issued later (the sweep: no more)',
      where: [
        ...AS_READ,
        "log.state = 'sending'",
        'log.dispatched_at IS NOT NULL',
        `${ISSUED_BEFORE}, or TRUE for the sweep`,
      ],
    },
    mayRun: SERVICE,
    issuedBy: 'the claim activity, the verify activity, the reconciliation sweep',
    writes: true,
  },
  releaseUndispatchedOrphan: {
    from: ['sending'],
    to: ['failed'],
    fence: {
      words: 'an orphan as read, never dispatched',
      where: [...AS_READ, "log.state = 'sending'", 'log.dispatched_at IS NULL'],
    },
    mayRun: SERVICE,
    issuedBy: 'the reconciliation sweep',
    writes: true,
  },
  settleDeferredUnknown: {
    from: ['failed', 'sending'],
    to: ['sent', 'failed'],
    fence: {
      words:
        'the row as read (an unknown left for a retry under the key, whose window closed; failed, or an ' +
        'undispatched orphan), this claim later',
      where: [
        ...AS_READ,
        "(log.state = 'failed' OR (log.state = 'sending' AND log.dispatched_at IS NULL))",
        ISSUED_BEFORE,
      ],
    },
    mayRun: SERVICE,
    issuedBy: 'the claim activity (by the policy)',
    writes: true,
  },
  reopenAfterSecondLook: {
    from: ['sent'],
    to: ['failed'],
    fence: {
      words:
        'an assume-sent attempt the second look may act on, no late answer of it, the order still confirmed',
      where: [
        ...SECOND_LOOK_FENCE,
        'NOT EXISTS (a late answer of this attempt)',
        "EXISTS (SELECT 1 FROM order_mail_source.orders_for_mail AS o WHERE o.order_id = log.order_id AND o.status = 'confirmed')",
      ],
    },
    mayRun: ['worker', 'migrator'],
    issuedBy: 'the second look (the reconciliation sweep)',
    writes: true,
  },
  secondLookFound: {
    from: ['sent'],
    to: ['sent'],
    fence: { words: 'an assume-sent attempt the second look may act on', where: SECOND_LOOK_FENCE },
    mayRun: ['worker', 'migrator'],
    issuedBy: 'the second look (the reconciliation sweep)',
    writes: true,
  },
  operatorResolve: {
    from: ['sending', 'sent', 'failed'],
    to: ['sent', 'failed'],
    fence: {
      words: 'the row as the operator saw it',
      where: [
        'log.order_id = :orderId',
        'log.state = :seenState',
        'log.attempts = :seenAttempts',
        'log.claim_token = :seenClaimToken',
        '(log.dispatched_at IS NOT NULL) = :seenDispatched',
      ],
    },
    mayRun: ['operator', 'migrator'],
    issuedBy: 'npm run ops -- resolve',
    writes: true,
  },
  operatorRetry: {
    from: ['sending', 'sent', 'failed', 'none'],
    to: 'unchanged',
    fence: { words: "none: Temporal's reset or a new start; the new run's claim moves the row", where: [] },
    mayRun: ['operator', 'migrator'],
    issuedBy: 'npm run ops -- retry (writes its act only)',
    writes: false,
  },
  pruneHistory: {
    from: ['sent'],
    to: 'unchanged',
    fence: {
      words: 'a row settled as sent and last touched before the cutoff; its attempts finished before it',
      where: ["log.state = 'sent'", 'log.updated_at < :cutoff', 'a.finished_at < :cutoff'],
    },
    mayRun: ['migrator'],
    issuedBy: 'npm run prune (as the tables owner)',
    writes: true,
  },
  caseStudyClaim: {
    from: ['none'],
    to: ['sending'],
    fence: {
      words:
        "the case study's INSERT; the trigger gives it a 'legacy:' token, issued at the epoch, counted dispatched",
      where: ['ON CONFLICT DO NOTHING'],
    },
    mayRun: ['caseStudyWriter'],
    issuedBy: "the case study's old workers",
    writes: true,
  },
  caseStudyReclaim: {
    from: ['failed'],
    to: ['sending'],
    fence: {
      words: "the case study's WHERE state='failed'; the trigger adds: last claimed by an outside writer",
      where: ["state = 'failed'", "trigger: OLD.claim_token LIKE 'legacy:%'"],
    },
    mayRun: ['caseStudyWriter'],
    issuedBy: "the case study's old workers",
    writes: true,
  },
  caseStudyRecord: {
    from: ['sending'],
    to: ['sent', 'failed'],
    fence: {
      words:
        "the case study's record (sent, or failed after a 4xx); the trigger: only a row an outside writer holds",
      where: ['order_id = :orderId', "trigger: OLD.state = 'sending' AND OLD.claim_token LIKE 'legacy:%'"],
    },
    mayRun: ['caseStudyWriter'],
    issuedBy: "the case study's old workers",
    writes: true,
  },
  caseStudyLateRecord: {
    from: ['sending', 'sent', 'failed'],
    to: 'unchanged',
    fence: {
      words:
        "the case study's record on a row no outside writer holds: the row stays, its word is a late answer",
      where: [
        'order_id = :orderId',
        "trigger: NOT (OLD.state = 'sending' AND OLD.claim_token LIKE 'legacy:%')",
      ],
    },
    mayRun: ['caseStudyWriter'],
    issuedBy: "the case study's old workers",
    writes: true,
  },
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof TRANSITIONS;
