// A bounded model of one order's mail row (docs/design.md §3, "Checked exhaustively"): the actors that move it,
// each move named by the real transition table and each claim decided by the real decideClaim. The explorer
// (./explore.ts) walks every interleaving within the bounds below.
import type { ClaimRequest } from '../../src/mailRow/decide';
import { decideClaim, type ClaimFacts, type ClaimRow, type ClaimStep } from '../../src/mailRow/decide';
import { TRANSITIONS, type RoleGroup, type TransitionName } from '../../src/mailRow/transitions';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import {
  decideUnknownOutcome,
  recordOfUnknown,
  type UnknownOutcomeDecision,
  type VerificationAnswer,
} from '../../src/shared/unknownOutcome';
import { ownAttemptFacts, retryFollowing, sweptOrphanFacts } from '../../src/shared/unknownOutcomeFacts';
import { afterAttempt } from '../../src/shared/workflowSettings';
import { notAcceptedOutcome, recordOfAnswer } from '../../src/shared/sendOutcome';

/** What asking the provider can tell: a lookup (generic, Postmark, Mailgun), webhooks (SES, SendGrid), nothing. */
export type Evidence = 'lookup' | 'webhook' | 'none';

export interface ProviderProfile {
  name: string;
  evidence: Evidence;
  /** Resend: a repeat of a key inside its window is answered from its store. */
  dedupesByKey: boolean;
}

export const PROVIDERS: readonly ProviderProfile[] = [
  { name: 'generic', evidence: 'lookup', dedupesByKey: false },
  { name: 'postmark', evidence: 'lookup', dedupesByKey: false },
  { name: 'mailgun', evidence: 'lookup', dedupesByKey: false },
  { name: 'resend', evidence: 'none', dedupesByKey: true },
  { name: 'ses', evidence: 'webhook', dedupesByKey: false },
  { name: 'sendgrid', evidence: 'webhook', dedupesByKey: false },
  { name: 'smtp', evidence: 'none', dedupesByKey: false },
];

/** Mutations of the product's rules, to show the checker catches them (never edits of src/). */
export interface Mutations {
  /** Migration 0009's rule: any session that sets order_mail.writer passes the trigger as this service. */
  sessionSettingTrigger?: boolean;
  /** A lookup's "not found" counts without a freshness witness. */
  notFoundWithoutWitness?: boolean;
  /** The sweep never takes its second look at an assume-sent row. */
  noSecondLook?: boolean;
}

export interface Bounds {
  /** Runs of the one workflow id: the first, one after a Reset (or the operator's retry), one after a reopen. */
  runs: number;
  /** Attempts each run may claim. */
  attemptsPerRun: number;
  /** Provider faults (an answer other than accepted, a lookup outage, a lost webhook, a terminate). */
  faults: number;
  /** Ticks of the clock (one tick: a minute); the key's window is `windowTicks`. */
  ticks: number;
  windowTicks: number;
  /** The worker running the first run's activities is this many minutes off; no decision may read it. */
  skewMinutes: number;
}

export const DEFAULT_BOUNDS: Bounds = {
  runs: 3,
  attemptsPerRun: 2,
  faults: 2,
  ticks: 3,
  windowTicks: 2,
  skewMinutes: 7,
};

export interface Config {
  provider: ProviderProfile;
  policy: UnknownOutcomePolicy;
  bounds: Bounds;
  mutations: Mutations;
}

const TICK_MS = 60_000;
/** Ticks the clock may run on once faults stopped: the sweep's grace, a settle delay, one more. */
export const AFTER_FAULTS_TICKS = 3;
const SCOPE = 'wf/order-1/';

type RunPc =
  | { at: 'claim' }
  | { at: 'dispatch'; attempt: number }
  | { at: 'request'; attempt: number }
  | { at: 'answered'; attempt: number; answer: 'accepted' | 'refused' | 'unknown' }
  | { at: 'verify'; attempt: number }
  | { at: 'verify-orphan'; holder: string; attempt: number }
  | { at: 'done' };

interface Run {
  id: string;
  /** Closed by a Reset or a terminate: its in-flight activity may still finish, nothing after it starts. */
  closed: boolean;
  /** The workflow time of its next claim: a later run's are later. */
  nextIssue: number;
  attemptsClaimed: number;
  pc: RunPc;
}

interface Row {
  state: 'sending' | 'sent' | 'failed';
  attempts: number;
  holder: string;
  issued: number;
  /** The tick of the claim and of the dispatch, on Postgres's clock. */
  claimedAt: number;
  dispatchedAt: number | null;
  outcome: string | null;
  unknownPolicy: string | null;
  verification: string | null;
  secondLook: 'reopened' | 'found' | null;
}

interface AuditRow {
  attempt: number;
  outcome: string;
  unknownPolicy: string | null;
  dispatchedAt: number | null;
}

/** One request that reached or tried to reach the provider under the send key. */
interface Request {
  at: number;
  accepted: boolean;
  /** Accepted but the provider's index shows it only from the next tick (a timeout's late accept). */
  lagging: boolean;
  /** What our side knows: 'not-taken' once an answer or evidence proved it never accepted. */
  known: 'taken' | 'not-taken' | 'unknown';
}

export interface State {
  now: number;
  faults: number;
  faultsStopped: boolean;
  row: Row | null;
  audit: AuditRow[];
  requests: Request[];
  /** Mails the customer received. */
  mails: number;
  runs: Run[];
  legacy: 'idle' | 'holding' | 'sent-accepted' | 'sent-refused' | 'done';
  /** Orders the case study's writer took up so far (its bound: two). */
  legacyCycles: number;
  violation: string | null;
}

export interface Step {
  actor: string;
  action: string;
  /** The transition of the table it ran, if it moved the row. */
  transition?: TransitionName;
  next: State;
}

export function initialState(): State {
  return {
    now: 0,
    faults: 0,
    faultsStopped: false,
    row: null,
    audit: [],
    requests: [],
    mails: 0,
    runs: [{ id: 'r1', closed: false, nextIssue: 10, attemptsClaimed: 0, pc: { at: 'claim' } }],
    legacy: 'idle',
    legacyCycles: 0,
    violation: null,
  };
}

function clone(s: State): State {
  return structuredClone(s);
}

const date = (t: number): Date => new Date(Date.UTC(2026, 11, 6, 10) + t * TICK_MS);

function request(config: Config, run: Run): ClaimRequest {
  const idempotency = config.provider.dedupesByKey
    ? { windowMs: config.bounds.windowTicks * TICK_MS, safetyMarginMs: 0 }
    : null;
  return {
    orderId: '1',
    claimToken: SCOPE + run.id,
    workflowScope: SCOPE,
    issuedAt: date(run.nextIssue),
    policy: config.policy,
    idempotency,
    sendTimeoutMs: 1_000,
    recordedBy: run.id,
    verifyDispatchedOrphans: config.provider.evidence !== 'none',
    providers: [config.provider.name],
  };
}

function claimRow(row: Row | null): ClaimRow | null {
  if (row === null) return null;
  return {
    orderId: '1',
    state: row.state,
    attempts: row.attempts,
    claimToken: row.holder,
    // The case study's claims are issued at the epoch (migration 0009's trigger).
    claimIssuedAt: row.holder.startsWith('legacy:') ? new Date(0) : date(row.issued),
    claimedAt: date(row.issued),
    resendCount: 0,
    dispatchedAt: row.dispatchedAt === null ? null : date(row.dispatchedAt),
    outcome: row.outcome as ClaimRow['outcome'],
    provider: 'p',
    providerChoice: 'first',
  };
}

/** The facts decideClaim asks for, as the claim reads them: audit rows and Postgres's clock, never a worker's. */
function answerFacts(s: State, row: Row | null, r: ClaimRequest, verdict?: ClaimFacts['verdict']): ClaimStep {
  const facts: ClaimFacts = verdict === undefined ? {} : { verdict };
  const firstDispatch = s.requests[0]?.at ?? null;
  for (;;) {
    const step = decideClaim(row === null ? 'unread' : claimRow(row), r, facts);
    if (step.kind !== 'need') return step;
    if (step.fact === 'provider-choice')
      facts.providerChoice = { provider: 'p', reason: 'first', explanation: '' };
    else if (step.fact === 'unknown-under-key') {
      const unknown = s.audit.filter((a) => a.outcome === 'unknown');
      const latest = unknown[unknown.length - 1];
      facts.unknownUnderKey =
        latest === undefined
          ? null
          : {
              unknownPolicy: latest.unknownPolicy,
              firstDispatchedAt: date(Math.min(...unknown.map((a) => a.dispatchedAt ?? 0))),
            };
    } else if (step.fact === 'since-key-first-dispatch') {
      facts.sinceKeyFirstDispatchMs = firstDispatch === null ? null : (s.now - firstDispatch) * TICK_MS;
    } else {
      facts.sinceAttemptDispatchMs = row?.dispatchedAt == null ? null : (s.now - row.dispatchedAt) * TICK_MS;
    }
  }
}

/** The verdicts a lookup or webhooks may give about the key's requests now, and whether each is a fault. */
function verdicts(s: State, config: Config): { answer: VerificationAnswer; fault: boolean }[] {
  const { evidence } = config.provider;
  const inconclusive = {
    answer: { kind: 'inconclusive', reason: 'down' } as VerificationAnswer,
    fault: true,
  };
  if (evidence === 'none') return [];
  const taken = s.requests.filter((q) => q.accepted);
  const indexed = taken.some((q) => !q.lagging || q.at < s.now);
  const found: VerificationAnswer = {
    kind: 'found',
    via: evidence === 'lookup' ? 'lookup' : 'webhook',
    providerMessageId: 'm',
  };
  const notFound: VerificationAnswer = { kind: 'not-found', via: 'lookup', sinceDispatchMs: TICK_MS };
  const out: { answer: VerificationAnswer; fault: boolean }[] = [];
  if (evidence === 'webhook') {
    // Webhooks never say "not found": an event came, or nothing did.
    if (taken.length > 0) out.push({ answer: found, fault: false });
    out.push({ ...inconclusive, fault: taken.length > 0 });
    return out;
  }
  if (indexed) out.push({ answer: found, fault: false });
  // Not found with a witness: a probe sent since shows the lookup is current, so only when nothing was taken,
  // and only past the settle delay (a tick) of every request that passed the fence.
  const settled = s.requests.every((q) => q.at < s.now) && !s.runs.some((r) => r.pc.at === 'request');
  if (taken.length === 0 && settled) out.push({ answer: notFound, fault: false });
  // Not found without a witness: the index is behind (a late accept) or the probe failed.
  const lagging = taken.length > 0 && !indexed;
  const withoutWitness: VerificationAnswer = config.mutations.notFoundWithoutWitness
    ? notFound
    : { kind: 'inconclusive', reason: 'not found, no witness' };
  out.push({ answer: withoutWitness, fault: !lagging });
  out.push(inconclusive);
  return out;
}

function check(
  s: State,
  config: Config,
  prev: State,
  transition: TransitionName | undefined,
  group: RoleGroup,
): State {
  if (s.violation !== null) return s;
  const why = invariantBroken(s, config, prev, transition, group);
  if (why !== null) s.violation = why;
  return s;
}

function invariantBroken(
  s: State,
  config: Config,
  prev: State,
  transition: TransitionName | undefined,
  group: RoleGroup,
): string | null {
  if (s.mails > 1) return 'two mails accepted for one order';
  const newest = s.requests[s.requests.length - 1];
  if (s.requests.length > prev.requests.length && newest !== undefined) {
    const earlier = s.requests.slice(0, -1).filter((q) => q.known !== 'not-taken');
    const insideWindow =
      s.requests[0] !== undefined && newest.at - s.requests[0].at < config.bounds.windowTicks;
    if (earlier.length > 0 && !(config.provider.dedupesByKey && insideWindow)) {
      return 'a second request under one key outside a deduping window, while an earlier one may have been taken';
    }
  }
  if (s.row !== null && s.row.state !== 'sending' && !s.audit.some((a) => a.attempt === s.row?.attempts)) {
    return `a settled row (${s.row.state}, attempt ${s.row.attempts}) without its audit row`;
  }
  const moved =
    prev.row !== null &&
    s.row !== null &&
    (prev.row.state !== s.row.state ||
      prev.row.attempts !== s.row.attempts ||
      prev.row.holder !== s.row.holder);
  if (
    prev.row?.state === 'sent' &&
    moved &&
    transition !== 'reopenAfterSecondLook' &&
    transition !== 'operatorResolve'
  ) {
    return `'sent' moved by ${transition ?? 'a statement outside the table'}`;
  }
  // The trigger's fence for the case study's UPDATEs (the table's caseStudyReclaim / caseStudyRecord rows).
  if (
    (transition === 'caseStudyReclaim' || transition === 'caseStudyRecord') &&
    !prev.row?.holder.startsWith('legacy:')
  ) {
    return `${transition} moved a row this service held (${prev.row?.holder ?? 'none'})`;
  }
  if (transition !== undefined) {
    const t = TRANSITIONS[transition];
    const from = prev.row?.state ?? 'none';
    if (!(t.from as readonly string[]).includes(from)) return `${transition} ran from '${from}'`;
    const to = s.row?.state ?? 'none';
    if (t.to !== 'unchanged' && !(t.to as readonly string[]).includes(to))
      return `${transition} left '${to}'`;
    if (!(t.mayRun as readonly RoleGroup[]).includes(group)) return `${transition} run by ${group}`;
  }
  return null;
}

/** Every move the model's actors can make from `s`. */
export function successors(s: State, config: Config): Step[] {
  if (s.violation !== null) return [];
  const out: Step[] = [];
  const push = (
    actor: string,
    action: string,
    group: RoleGroup,
    next: State,
    transition?: TransitionName,
  ): void => {
    out.push({
      actor,
      action,
      ...(transition ? { transition } : {}),
      next: check(next, config, s, transition, group),
    });
  };
  const canFault = !s.faultsStopped && s.faults < config.bounds.faults;
  for (const [i, run] of s.runs.entries()) runSteps(s, config, i, run, canFault, push);
  sweepSteps(s, config, canFault, push);
  operatorSteps(s, config, push);
  legacySteps(s, config, canFault, push);
  // A tick is longer than a claim's way to its request (the send's timeout) and than any activity's timeout:
  // neither a send nor a closed run's activity in flight straddles one.
  const sending = s.runs.some(
    (r) => r.pc.at === 'dispatch' || r.pc.at === 'request' || (r.closed && r.pc.at !== 'done'),
  );
  // After faults stop the clock runs on long enough for the sweep's grace and a settle delay.
  const lastTick = config.bounds.ticks + (s.faultsStopped ? AFTER_FAULTS_TICKS : 0);
  if (s.now < lastTick && !sending) {
    const next = clone(s);
    next.now++;
    push('clock', 'tick', 'worker', next);
  }
  if (!s.faultsStopped) {
    const next = clone(s);
    next.faultsStopped = true;
    push('world', 'faults stop', 'worker', next);
  }
  return out;
}

type Push = (
  actor: string,
  action: string,
  group: RoleGroup,
  next: State,
  transition?: TransitionName,
) => void;

function runSteps(s: State, config: Config, i: number, run: Run, canFault: boolean, push: Push): void {
  const pc = run.pc;
  if (pc.at === 'done') return;
  const act = (action: string, f: (n: State, r: Run) => TransitionName | undefined): void => {
    const next = clone(s);
    const r = next.runs[i] as Run;
    const transition = f(next, r);
    // A closed run's in-flight activity finished (the send's fence and request are one activity); nothing
    // after it is scheduled.
    if (run.closed && r.pc.at !== 'request') r.pc = { at: 'done' };
    push(run.id, action, 'worker', next, transition);
  };
  if (pc.at === 'claim') {
    if (run.attemptsClaimed >= config.bounds.attemptsPerRun) {
      act('gives up (attempts spent)', (_n, r) => ((r.pc = { at: 'done' }), undefined));
      return;
    }
    act('claim pass', (n, r) => claimPass(n, config, r));
    return;
  }
  // Only the claim may still run for a closed run: a send already scheduled also runs (it is in flight).
  if (run.closed && pc.at !== 'dispatch' && pc.at !== 'request') return;
  if (pc.at === 'dispatch') {
    act('dispatch fence', (n, r) => {
      const row = n.row;
      if (
        row?.state === 'sending' &&
        row.holder === SCOPE + r.id &&
        row.attempts === pc.attempt &&
        row.dispatchedAt === null
      ) {
        row.dispatchedAt = n.now;
        r.pc = { at: 'request', attempt: pc.attempt };
        return 'markDispatched';
      }
      r.pc = { at: 'claim' };
      return undefined;
    });
    return;
  }
  if (pc.at === 'request') {
    const answers: [
      'accepted' | 'refused' | 'dropped-after-accept' | 'dropped-before-provider' | 'timeout',
      boolean,
    ][] = [
      ['accepted', false],
      ['refused', true],
      ['dropped-after-accept', true],
      ['dropped-before-provider', true],
      ['timeout', true],
    ];
    for (const [answer, fault] of answers) {
      if (fault && !canFault) continue;
      act(`request: ${answer}`, (n, r) => {
        if (fault) n.faults++;
        const repeat =
          config.provider.dedupesByKey &&
          n.requests.some((q) => q.accepted && n.now - q.at < config.bounds.windowTicks);
        const accepted = answer === 'accepted' || answer === 'dropped-after-accept' || answer === 'timeout';
        n.requests.push({
          at: n.now,
          accepted: accepted && !repeat,
          lagging: answer === 'timeout',
          known: answer === 'accepted' ? 'taken' : answer === 'refused' ? 'not-taken' : 'unknown',
        });
        if (accepted && !repeat) n.mails++;
        const heard = answer === 'accepted' ? 'accepted' : answer === 'refused' ? 'refused' : 'unknown';
        r.pc = { at: 'answered', attempt: pc.attempt, answer: heard };
        return undefined;
      });
    }
    return;
  }
  if (pc.at === 'answered') {
    if (pc.answer === 'unknown') {
      const decision = ownDecision(s, config, run, null);
      if (decision.kind === 'verify') {
        act(
          'waits the settle delay to ask',
          (_n, r) => ((r.pc = { at: 'verify', attempt: pc.attempt }), undefined),
        );
        return;
      }
      act(`records ${decision.kind}`, (n, r) => recordUnknown(n, r, pc.attempt, decision));
      return;
    }
    act(`records ${pc.answer}`, (n, r) => {
      // Recorded as the workflow records the provider's own answer.
      if (pc.answer === 'accepted')
        return record(n, r, pc.attempt, { kind: 'accepted', ...recordOfAnswer(ACCEPTED) });
      n.requests[n.requests.length - 1]!.known = 'not-taken';
      return record(n, r, pc.attempt, { kind: 'rejected', ...recordOfAnswer(REFUSED) });
    });
    return;
  }
  if (pc.at === 'verify') {
    if (!(s.now > (s.row?.dispatchedAt ?? 0))) return; // the settle delay
    for (const { answer, fault } of verdicts(s, config)) {
      if (fault && !canFault) continue;
      act(`asks: ${answer.kind}`, (n, r) => {
        if (fault) n.faults++;
        const decision = ownDecision(n, config, r, answer);
        if (decision.kind === 'verify') throw new Error('asked twice');
        return recordUnknown(n, r, pc.attempt, decision);
      });
    }
    return;
  }
  // verify-orphan: the claim handed back a dispatched orphan; ask, settle it, claim again.
  if (!(s.now > (s.row?.dispatchedAt ?? 0))) return; // the settle delay
  for (const { answer, fault } of verdicts(s, config)) {
    if (fault && !canFault) continue;
    act(`asks about ${pc.holder}'s attempt: ${answer.kind}`, (n, r) => {
      if (fault) n.faults++;
      r.pc = { at: 'claim' };
      const step = answerFacts(n, n.row, request(config, r), {
        holder: pc.holder,
        attempt: pc.attempt,
        answer,
      });
      if (step.kind !== 'run' || step.transition.name !== 'settleDispatchedOrphan') return undefined;
      return settleDispatched(n, step.transition.decision, r.id);
    });
  }
}

const VERIFYING = {};
const ACCEPTED = { outcome: 'accepted', httpStatus: 200, providerMessageId: 'm' } as const;
const REFUSED = notAcceptedOutcome({
  outcome: 'rejected',
  httpStatus: 422,
  errorCode: null,
  reason: 'refused',
});
const ATTEMPTS = (config: Config) => ({
  maxSendAttempts: config.bounds.attemptsPerRun,
  retryInitialIntervalMs: 0,
  retryMaxIntervalMs: 0,
});
const UNKNOWN_SENT = {
  outcome: 'unknown',
  retryable: true,
  retryAfterMs: null,
  httpStatus: null,
  reason: 'unknown',
} as const;

function ownDecision(s: State, config: Config, run: Run, answer: VerificationAnswer | null) {
  const first = s.requests[0]?.at ?? null;
  return decideUnknownOutcome(
    ownAttemptFacts({
      attempt: {
        dispatched: true,
        sinceKeyFirstDispatchMs: first === null ? null : (s.now - first) * TICK_MS,
      },
      settings: {
        unknownOutcomePolicy: config.policy,
        idempotency: config.provider.dedupesByKey
          ? { windowMs: config.bounds.windowTicks * TICK_MS, safetyMarginMs: 0 }
          : null,
        sendTimeoutMs: 1_000,
        // Only whether it is set matters to the decision.
        verification: config.provider.evidence === 'none' ? null : (VERIFYING as never),
      },
      // What follows this attempt, by the workflow's own rule: another, while the run has attempts left.
      ...retryFollowing(afterAttempt(ATTEMPTS(config), run.attemptsClaimed, UNKNOWN_SENT)),
      providerError: null,
      answer,
    }),
  );
}

/** An unknown's decision, recorded as the workflow records it (the model keeps no texts, so no facts for them). */
function recordUnknown(n: State, r: Run, attempt: number, decision: UnknownOutcomeDecision) {
  const fields = recordOfUnknown(
    decision,
    { sinceKeyFirstDispatchMs: null, idempotency: null },
    UNKNOWN_SENT,
  );
  return record(n, r, attempt, { kind: decision.kind, ...fields });
}

/** The record activity: fenced on this attempt still holding the claim. */
function record(
  n: State,
  r: Run,
  attempt: number,
  decision: {
    kind: string;
    state: 'sent' | 'failed';
    outcome: string;
    unknownPolicy: string | null;
    verification?: string | null;
  },
): TransitionName | undefined {
  const row = n.row;
  learn(n, decision);
  r.pc = decision.state === 'failed' ? { at: 'claim' } : { at: 'done' };
  if (row?.state !== 'sending' || row.holder !== SCOPE + r.id || row.attempts !== attempt) {
    r.pc = { at: 'done' };
    return undefined;
  }
  row.state = decision.state;
  row.outcome = decision.outcome;
  row.unknownPolicy = decision.unknownPolicy;
  row.verification = decision.verification ?? null;
  n.audit.push({
    attempt,
    outcome: decision.outcome,
    unknownPolicy: decision.unknownPolicy,
    dispatchedAt: row.dispatchedAt,
  });
  return 'record';
}

/** Evidence that the key's requests were not taken marks them known (a witness-backed not found, a 4xx). */
function learn(n: State, decision: { kind: string }): void {
  if (decision.kind === 'verified-not-sent')
    for (const q of n.requests) if (q.known === 'unknown') q.known = 'not-taken';
}

function claimPass(n: State, config: Config, r: Run): TransitionName | undefined {
  const req = request(config, r);
  const step = answerFacts(n, n.row, req);
  r.nextIssue++;
  if (step.kind === 'read-again' || step.kind === 'need') return undefined;
  if (step.kind === 'answer') {
    const a = step.answer;
    if (a.kind === 'claimed') {
      r.pc = { at: 'dispatch', attempt: a.attempt };
    } else if (a.kind === 'verify-orphan') {
      r.pc = { at: 'verify-orphan', holder: a.holder, attempt: a.attempt };
    } else r.pc = { at: 'done' };
    return undefined;
  }
  const t = step.transition;
  const row = n.row;
  const token = SCOPE + r.id;
  if (t.name === 'firstClaim') {
    if (row !== null) return undefined;
    n.row = {
      state: 'sending',
      attempts: 1,
      holder: token,
      issued: r.nextIssue - 1,
      claimedAt: n.now,
      dispatchedAt: null,
      outcome: null,
      unknownPolicy: null,
      verification: null,
      secondLook: null,
    };
    r.attemptsClaimed++;
    r.pc = { at: 'dispatch', attempt: 1 };
    return 'firstClaim';
  }
  if (row === null) return undefined;
  if (t.name === 'reclaimFailed' || t.name === 'takeOverUndispatched') {
    if (t.name === 'takeOverUndispatched') {
      n.audit.push({ attempt: row.attempts, outcome: 'not_sent', unknownPolicy: null, dispatchedAt: null });
    }
    Object.assign(row, {
      state: 'sending',
      attempts: row.attempts + 1,
      holder: token,
      issued: r.nextIssue - 1,
      claimedAt: n.now,
      dispatchedAt: null,
      outcome: null,
      unknownPolicy: null,
      verification: null,
    });
    r.attemptsClaimed++;
    r.pc = { at: 'dispatch', attempt: row.attempts };
    return t.name;
  }
  if (t.name === 'settleDeferredUnknown') {
    // From an undispatched orphan: its attempt is audited as not sent first (takeOverUndispatched's).
    if (t.orphanNote !== null) {
      n.audit.push({ attempt: row.attempts, outcome: 'not_sent', unknownPolicy: null, dispatchedAt: null });
    }
    const dispatchedAt = Math.min(
      ...n.audit.filter((a) => a.outcome === 'unknown').map((a) => a.dispatchedAt ?? 0),
    );
    Object.assign(row, {
      state: t.decision.state,
      outcome: t.decision.outcome,
      unknownPolicy: t.decision.unknownPolicy,
      attempts: row.attempts + 1,
      holder: token,
      dispatchedAt,
    });
    n.audit.push({
      attempt: row.attempts,
      outcome: t.decision.outcome,
      unknownPolicy: t.decision.unknownPolicy,
      dispatchedAt: null,
    });
    return 'settleDeferredUnknown';
  }
  return settleDispatched(n, t.decision, r.id);
}

function settleDispatched(n: State, decision: UnknownOutcomeDecision, _by: string): TransitionName {
  const row = n.row as Row;
  learn(n, decision);
  Object.assign(row, {
    state: decision.state,
    outcome: decision.outcome,
    unknownPolicy: decision.unknownPolicy,
    verification: decision.verification ?? null,
  });
  n.audit.push({
    attempt: row.attempts,
    outcome: decision.outcome,
    unknownPolicy: decision.unknownPolicy,
    dispatchedAt: row.dispatchedAt,
  });
  return 'settleDispatchedOrphan';
}

/** The holder of a 'sending' row is gone: a closed run of ours, or the case study's writer that stopped. */
function holderGone(s: State, row: Row): boolean {
  // The sweep cannot see the old workers: a row of theirs quiet past the grace is settled, alive or not.
  if (row.holder.startsWith('legacy:')) return true;
  const run = s.runs.find((r) => SCOPE + r.id === row.holder);
  return run !== undefined && run.closed && run.pc.at === 'done';
}

function sweepSteps(s: State, config: Config, canFault: boolean, push: Push): void {
  const row = s.row;
  if (row === null) return;
  const grace = 1;
  // A run that took the row after its holder closed is its successor: the sweep leaves it to that run.
  const successorOpen = s.runs.some((r) => !r.closed && r.pc.at !== 'done');
  if (
    row.state === 'sending' &&
    holderGone(s, row) &&
    !successorOpen &&
    s.now >= (row.dispatchedAt ?? row.claimedAt) + grace
  ) {
    // The case study's request carried no send key of ours: nothing to ask about, the policy decides.
    const unaskable =
      row.dispatchedAt === null || config.provider.evidence === 'none' || row.holder.startsWith('legacy:');
    const answers: ({ answer: VerificationAnswer; fault: boolean } | undefined)[] = unaskable
      ? [undefined]
      : verdicts(s, config);
    for (const v of answers) {
      if (v?.fault && !canFault) continue;
      const next = clone(s);
      if (v?.fault) next.faults++;
      const decision = decideUnknownOutcome(
        sweptOrphanFacts({
          dispatched: row.dispatchedAt !== null,
          policy: config.policy,
          ...(v ? { answer: v.answer } : {}),
        }),
      );
      let transition: TransitionName;
      if (decision.kind === 'not-sent') {
        Object.assign(next.row as Row, { state: 'failed', outcome: 'not_sent', unknownPolicy: null });
        next.audit.push({
          attempt: row.attempts,
          outcome: 'not_sent',
          unknownPolicy: null,
          dispatchedAt: null,
        });
        transition = 'releaseUndispatchedOrphan';
      } else transition = settleDispatched(next, decision, 'sweep');
      push(
        'sweep',
        `settles the closed holder's attempt: ${decision.kind}${v ? ` (${v.answer.kind})` : ''}`,
        'worker',
        next,
        transition,
      );
    }
  }
  // The second look: an assume-sent row with inconclusive evidence, asked once more inside its bound.
  if (
    !config.mutations.noSecondLook &&
    config.provider.evidence === 'lookup' &&
    row.state === 'sent' &&
    row.unknownPolicy === 'assume-sent' &&
    row.verification === 'inconclusive' &&
    row.secondLook === null &&
    !row.holder.startsWith('legacy:') &&
    s.now > (row.dispatchedAt ?? 0)
  ) {
    for (const { answer, fault } of verdicts(s, config)) {
      if (fault && !canFault) continue;
      if (answer.kind === 'inconclusive') continue; // the look is taken again next sweep
      const next = clone(s);
      if (fault) next.faults++;
      const r = next.row as Row;
      if (answer.kind === 'found') {
        r.secondLook = 'found';
        push('sweep', 'second look: found', 'worker', next, 'secondLookFound');
        continue;
      }
      learn(next, { kind: 'verified-not-sent' });
      Object.assign(r, { state: 'failed', outcome: 'not_sent', unknownPolicy: null, secondLook: 'reopened' });
      // The sweep starts the order's workflow again (a new run of the id).
      if (next.runs.length < config.bounds.runs) next.runs.push(newRun(next));
      push('sweep', 'second look: not found (witness): reopens', 'worker', next, 'reopenAfterSecondLook');
    }
  }
}

/** Closes every run: only an activity in flight (a claim pass, the dispatch fence, the request) still finishes. */
function closeAll(s: State): void {
  for (const r of s.runs) {
    r.closed = true;
    if (r.pc.at !== 'claim' && r.pc.at !== 'dispatch' && r.pc.at !== 'request') r.pc = { at: 'done' };
  }
}

function newRun(s: State): Run {
  const id = `r${s.runs.length + 1}`;
  return { id, closed: false, nextIssue: 10 * (s.runs.length + 1), attemptsClaimed: 0, pc: { at: 'claim' } };
}

function operatorSteps(s: State, config: Config, push: Push): void {
  if (s.runs.length >= config.bounds.runs) return;
  const open = s.runs.find((r) => !r.closed && r.pc.at !== 'done');
  // Reset while a run is open (a fault: it closes the run mid-step); retry once it ended failed (no fault).
  if (open !== undefined && !s.faultsStopped && s.faults < config.bounds.faults) {
    const next = clone(s);
    next.faults++;
    closeAll(next);
    next.runs.push(newRun(next));
    push('operator', `resets ${open.id}`, 'operator', next);
    const terminated = clone(s);
    terminated.faults++;
    closeAll(terminated);
    push('operator', `terminates ${open.id}`, 'operator', terminated);
  }
  if (open === undefined && s.row?.state === 'failed') {
    const next = clone(s);
    closeAll(next);
    next.runs.push(newRun(next));
    push('operator', 'retries the failed order', 'operator', next);
  }
}

/** The case study's old worker: claim (INSERT, or UPDATE of a failed row), send, record sent or failed. */
function legacySteps(s: State, config: Config, canFault: boolean, push: Push): void {
  const passes = (row: Row): boolean =>
    config.mutations.sessionSettingTrigger === true || row.holder.startsWith('legacy:');
  if (s.legacy === 'idle') {
    const row = s.row;
    if (row === null) {
      const next = clone(s);
      next.row = {
        state: 'sending',
        attempts: 1,
        holder: 'legacy:1',
        issued: 0,
        claimedAt: s.now,
        dispatchedAt: s.now,
        outcome: null,
        unknownPolicy: null,
        verification: null,
        secondLook: null,
      };
      next.legacy = 'holding';
      push('case study', 'claims (INSERT)', 'caseStudyWriter', next, 'caseStudyClaim');
    } else if (row.state === 'failed' && passes(row)) {
      const next = clone(s);
      const r = next.row as Row;
      r.state = 'sending';
      r.attempts++;
      // The trigger makes the claim its own; past the trigger its UPDATE keeps our token and dispatch.
      if (row.holder.startsWith('legacy:')) {
        r.holder = 'legacy:1';
        r.claimedAt = s.now;
        r.dispatchedAt = s.now;
      }
      next.legacy = 'holding';
      push(
        'case study',
        "claims again (UPDATE … WHERE state='failed')",
        'caseStudyWriter',
        next,
        'caseStudyReclaim',
      );
    }
    return;
  }
  if (s.legacy === 'holding') {
    for (const accepted of [true, false]) {
      if (!accepted && !canFault) continue;
      const next = clone(s);
      if (!accepted) next.faults++;
      // It sends no key of ours; its request is a mail or nothing.
      if (accepted) next.mails++;
      next.legacy = accepted ? 'sent-accepted' : 'sent-refused';
      push('case study', `sends: ${accepted ? 'accepted' : 'refused'}`, 'caseStudyWriter', next);
    }
    if (canFault) {
      const next = clone(s);
      next.faults++;
      next.legacy = 'done';
      push('case study', 'stops before sending', 'caseStudyWriter', next);
    }
    return;
  }
  if (s.legacy === 'sent-accepted' || s.legacy === 'sent-refused') {
    const next = clone(s);
    next.legacyCycles++;
    next.legacy = next.legacyCycles < 2 ? 'idle' : 'done';
    const settled = s.legacy === 'sent-accepted' ? 'sent' : 'failed';
    const row = next.row;
    if (row !== null && (row.state === 'sending' || config.mutations.sessionSettingTrigger) && passes(row)) {
      const ownRow = row.holder.startsWith('legacy:');
      row.state = settled;
      row.outcome = 'legacy';
      // The trigger writes the audit row; past it, the case study's UPDATE writes none.
      if (ownRow) {
        next.audit.push({
          attempt: row.attempts,
          outcome: 'legacy',
          unknownPolicy: null,
          dispatchedAt: row.dispatchedAt,
        });
      }
      push('case study', `records ${settled}`, 'caseStudyWriter', next, 'caseStudyRecord');
    } else
      push(
        'case study',
        `records ${settled}: kept as a late answer`,
        'caseStudyWriter',
        next,
        'caseStudyLateRecord',
      );
  }
}

/** Liveness once nothing can move: exactly one mail, and no row left 'sending'. Null when it holds. */
export function quiescentBroken(s: State): string | null {
  if (!s.faultsStopped) return null;
  if (s.row?.state === 'sending') return 'a row left sending with nothing left to settle it';
  if (s.mails !== 1) return `the order ended with ${s.mails} mails`;
  return null;
}
