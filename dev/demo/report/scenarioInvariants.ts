// The invariants only a scenario can break, which invariants.ts adds to the run's when the run is one: an
// operator's acts (--operators), webhooks that lie (--lying-provider over Mailgun or SendGrid), and a second
// provider (--failover). Pure, judged from the run's facts (facts.ts) and its sections.
import type { FailoverSection } from './failoverReport';
import type {
  AttemptFact,
  LookupReorderFacts,
  MessageFact,
  OperatorFacts,
  RunFact,
  SendHoldFacts,
  UpgradeFacts,
  WebhookFacts,
} from './facts';
import { judged, type InvariantResult } from './invariantResult';
import { openRunAt } from './operatorReport';
import { acceptedEventIds, acceptedPostings, buildWebhookLieSection, mayBeKept } from './webhookLieReport';

/** The invariants only an operator's acts can break, each with the acts done on the orders that break it. */
export function operatorInvariants(
  facts: OperatorFacts,
  orders: { orderId: string }[],
  actsBehind: (broken: string[]) => Record<string, number>,
): InvariantResult[] {
  const everyRunClosed: string[] = orders
    .filter((order) => (facts.runs[order.orderId] ?? []).some((run) => run.status === 'RUNNING'))
    .map((order) => order.orderId);

  // A pause is matched by a later unpause of the same activity that was done, or refused because the activity
  // had gone (it finished while paused, or its run closed): nothing is left paused.
  const stillPaused = new Set<string>();
  for (const act of [...facts.acts].sort((a, b) => a.at.localeCompare(b.at))) {
    const key = `${act.orderId}/${act.runId}/${act.activityId}`;
    if (act.act === 'activity-pause' && act.result === 'done') stillPaused.add(key);
    if (act.act === 'activity-unpause' && act.result !== 'failed') stillPaused.delete(key);
  }

  // A resolve must be refused while a dispatched send of an open run is in flight (its outcome is about to be
  // known; settling it by hand drops what the provider answers). The act's audit row says what it found.
  const resolvedInFlight = facts.acts
    .filter(
      (act) =>
        (act.act === 'ops-resolve-sent' || act.act === 'ops-resolve-failed') &&
        act.result === 'done' &&
        act.rowBefore?.state === 'sending' &&
        act.rowBefore.dispatchedAt !== null &&
        runWasOpen(facts.runs[act.orderId] ?? [], act.rowBefore.claimToken, act.at),
    )
    .map((act) => act.orderId);

  return [
    judged(
      'every-run-closed',
      'every run of every order workflow is closed (completed, failed, cancelled or terminated)',
      everyRunClosed,
      actsBehind,
    ),
    judged(
      'every-paused-send-unpaused',
      'every send activity an operator paused was unpaused again (or had finished meanwhile)',
      [...stillPaused].map((key) => key.split('/')[0]!),
      actsBehind,
    ),
    judged(
      'no-resolve-while-a-send-is-in-flight',
      'no resolve was done while a dispatched send of an open run was in flight (it must be refused)',
      [...new Set(resolvedInFlight)],
      actsBehind,
    ),
  ];
}

/**
 * Whether the run named by a claim token ('<namespace>/<workflow id>/<run id>') was open at `at`. (A run made
 * by a reset to a point after the claim carries the old run's token: such a send in flight is not seen here.)
 */
function runWasOpen(runs: RunFact[], claimToken: string, at: string): boolean {
  const runId = claimToken.slice(claimToken.lastIndexOf('/') + 1);
  return openRunAt(
    runs.filter((run) => run.runId === runId),
    at,
  );
}

/**
 * No refused webhook wrote a row: every stored event is one of a posting the receiver took and no lie's own,
 * every event taken is stored once, no refused lie's replay token is kept, and the token table holds no more
 * rows than postings were taken.
 */
export function noRefusedWebhookWroteARow(facts: WebhookFacts): InvariantResult {
  const accepted = acceptedEventIds(facts);
  const lieOnly = new Set(
    facts.liePostings
      .filter((posting) => posting.isLie)
      .flatMap((posting) => posting.eventIds)
      .filter((id) => !accepted.has(id)),
  );
  const stored = new Set(facts.rows.storedEventIds);
  const violations: string[] = [];
  for (const id of facts.rows.storedEventIds) {
    if (lieOnly.has(id)) violations.push(`event ${id} of a lie stored`);
    else if (!accepted.has(id)) violations.push(`event ${id} stored, but no posting of it was taken`);
  }
  if (stored.size !== facts.rows.storedEventIds.length) violations.push('an event stored twice');
  // A lie from elsewhere whose answer was lost may or may not have been stored: allowed, not required.
  const perhaps = new Set(
    facts.liePostings.filter((p) => mayBeKept(p) && p.answer !== 'kept').flatMap((p) => p.eventIds),
  );
  for (const id of accepted)
    if (!stored.has(id) && !perhaps.has(id)) violations.push(`event ${id} taken (2xx) but not stored`);
  for (const token of facts.rows.refusedTokensStored)
    violations.push(`refused posting's token ${token} kept`);
  const taken = acceptedPostings(facts);
  if (facts.rows.deliveryRows > taken) {
    violations.push(`${facts.rows.deliveryRows} replay tokens kept for ${taken} postings taken`);
  }
  return judged(
    'no-refused-webhook-wrote-a-row',
    'no webhook the receiver refused wrote a row: its events tables hold exactly the events of postings it ' +
      'took (no lie believed), and no refused posting left a replay token',
    violations,
  );
}

/**
 * No lie believed (a forged or stale event stored as ours, or one from elsewhere settling a send SES never
 * took), and, where the provider retries by a delivery policy (SES over SNS), no genuine event refused or left
 * untaken: each was taken, retries after a receiver outage included.
 */
export function webhookEvidenceInvariants(
  facts: WebhookFacts,
  attempts: AttemptFact[],
  messages: MessageFact[],
): InvariantResult[] {
  const { believed, genuine } = buildWebhookLieSection(facts, attempts, messages);
  const lies = [
    ...(believed.byReceiver > 0 ? [`${believed.byReceiver} lie postings stored as ours`] : []),
    ...believed.orders.map((orderId) => `order ${orderId} settled by a lie from elsewhere`),
  ];
  const results = [judged('no-lie-believed', 'no webhook lie was believed or settled an attempt', lies)];
  if (genuine != null) {
    const refused = [
      ...(genuine.refused > 0 ? [`${genuine.refused} genuine events refused`] : []),
      ...(genuine.neverTaken > 0 ? [`${genuine.neverTaken} genuine events never taken`] : []),
    ];
    results.push(
      judged(
        'no-genuine-event-refused',
        'every genuine event was taken, its retries included (none refused, none left when retries ran out)',
        refused,
      ),
    );
  }
  return results;
}

/** The failover rule: an attempt leaves a provider only after every earlier attempt of its key was not sent. */
export function failoverInvariants(section: FailoverSection): InvariantResult[] {
  return [
    judged(
      'never-left-a-possible-send',
      'no attempt went to another provider than an earlier attempt of its key that was not known not sent',
      section.movedAfterPossibleSend,
    ),
  ];
}

/** A --hold-at run: nothing reached the provider from hold's return until resume, and both were made. */
export function sendHoldInvariants(hold: SendHoldFacts): InvariantResult[] {
  return [
    judged(
      'no-request-while-held',
      "no send request reached the provider from ops hold's return until resume (lookups apart)",
      [
        ...(hold.failure === null ? [] : [`the hold or the resume failed: ${hold.failure}`]),
        ...(hold.requestsDuringHold === 0
          ? []
          : [`${hold.requestsDuringHold} request(s) reached the provider while held`]),
      ],
    ),
  ];
}

/**
 * An --upgrade-at run: the four switches made, each after its build polled; runs on every build; no run failed
 * for non-determinism; no run crossed builds; enough runs of the build being left in each place at each switch.
 */
export function upgradeInvariants(upgrade: UpgradeFacts): InvariantResult[] {
  return [
    judged(
      'upgrade-switches-made',
      'the rollout made N current, ramped N+1, made N+1 current, then N again, each once its workers were seen ' +
        'polling',
      [
        ...(upgrade.failure === null ? [] : [`a switch failed: ${upgrade.failure}`]),
        ...(upgrade.switches.length === UPGRADE_CHAIN.length
          ? []
          : [`${upgrade.switches.length} of ${UPGRADE_CHAIN.length} switches made`]),
        ...upgrade.switches.flatMap((shot, index) => {
          const expected = UPGRADE_CHAIN[index];
          const build = shot.to.slice(shot.to.lastIndexOf(':') + 1);
          return expected === undefined || (expected.build === build && expected.kind === shot.kind)
            ? []
            : [`switch ${index + 1} made ${shot.to} ${shot.kind}, not ${expected.build} ${expected.kind}`];
        }),
        ...upgrade.switches
          .filter((shot) => !(shot.polling.confirmedAtMs <= shot.atMs))
          .map((shot) => `${shot.to} at ${Math.round(shot.atMs / 1000)} s: made before its workers polled`),
      ],
    ),
    judged(
      'runs-on-every-build',
      'runs started on each build: 2.0 (unversioned), N and N+1, so each switch met orders still flowing',
      UPGRADE_BUILDS.filter((build) => !((upgrade.runsByBuild[build] ?? 0) > 0)).map(
        (build) => `no run on ${build}`,
      ),
    ),
    judged(
      'no-nondeterminism',
      'no workflow task failed for non-determinism: every run replayed only on the build that started it',
      [
        ...upgrade.nondeterminismFailures,
        ...(upgrade.historiesUnreadable === 0 ? [] : [`${upgrade.historiesUnreadable} histories unreadable`]),
      ],
    ),
    judged(
      'no-run-crossed-builds',
      "no run went from one build to another, but 2.0's unversioned runs onto N, the first versioned build",
      upgrade.crossedBuilds,
    ),
    judged(
      'old-runs-per-state-at-switch',
      `at every switch, at least ${upgrade.minPerState} open runs of the build being left in each of claimed, ` +
        'mid-send, a settle delay and a not-sent backoff, counted from the rows',
      upgrade.switches.flatMap((shot) =>
        OLD_RUN_PLACES.filter((place) => shot.oldRuns[place] < upgrade.minPerState).map(
          (place) =>
            `${shot.to} at ${Math.round(shot.atMs / 1000)} s: ${shot.oldRuns[place]} ${place} of ${shot.from}`,
        ),
      ),
    ),
  ];
}

const OLD_RUN_PLACES = ['claimed', 'midSend', 'settleDelay', 'notSentBackoff'] as const;
/** 2.0 → N current → N+1 ramping → N+1 current → back to N (dev/demo/upgradeAct.ts). */
const UPGRADE_CHAIN = [
  { build: 'n', kind: 'current' },
  { build: 'n1', kind: 'ramping' },
  { build: 'n1', kind: 'current' },
  { build: 'n', kind: 'current' },
] as const;
const UPGRADE_BUILDS = ['unversioned', 'n', 'n1'] as const;

/**
 * A --lookup-reorder run: the reordering stayed inside what its provider promises (docs/providers.md, "What a
 * witness assumes, per provider"), so the run's other invariants are the product's to keep. Broken when the
 * generic gateway gave a watermark past a message it hid, Mailgun held one past its threshold (the settle delay),
 * or a lookup read in the order taken (Postmark, a generic answer without a watermark) held one for the witness
 * rule's whole margin (the send timeout after an attempt's dispatch). A duplicate in such a run is the lie's.
 */
export function lookupReorderInvariant(reorder: LookupReorderFacts): InvariantResult {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const broken: string[] = [];
  if (reorder.provider === 'generic' && reorder.watermark !== 'absent') {
    if (reorder.watermarkPastHidden > 0) {
      broken.push(`${reorder.watermarkPastHidden} answers gave a watermark past a message they hid`);
    }
  } else if (reorder.provider === 'mailgun') {
    if (reorder.holdMs > reorder.settleDelayMs) {
      broken.push(
        `held ${seconds(reorder.holdMs)}, past Mailgun's threshold (the settle delay, ${seconds(reorder.settleDelayMs)})`,
      );
    }
  } else if (reorder.holdMs >= reorder.sendTimeoutMs) {
    broken.push(
      `held ${seconds(reorder.holdMs)} by a lookup read in the order taken, not under the send timeout ` +
        `(${seconds(reorder.sendTimeoutMs)}) the witness rule leaves after an attempt's dispatch`,
    );
  }
  return judged(
    'lookup-reorder-within-contract',
    "the lookup's reordering stayed within what its provider promises (generic: an honest watermark; Mailgun: " +
      'its threshold; read in the order taken: under the send timeout)',
    broken,
  );
}
