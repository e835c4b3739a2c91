// The --provider-change section of the report and its invariants. Pure: the facts are the change's steps
// (dev/demo/providerChange.ts), the log rows, the attempts with their providers, the mails the sandboxes
// received, the requests that came with the revoked key, and the listing of the one `npm run ops` command
// that names the customers left without a mail.
//   - customers with two mails: none (also a product invariant; said here for the change);
//   - customers without a mail among the orders a draining destination can verify (an attempt at the drained
//     provider, or a row dispatched under the rotated provider's old key): none;
//   - every other customer without a mail is listed by the ops command, and the command lists no one else;
//   - the old key was used by no request after it was revoked, and the change was done to its end.
import type { ProviderChangeFacts } from './providerChangeFacts';
import { judged, type InvariantResult } from './invariantResult';

/** One order as the ops command listed it: its row, and the reason it gives. */
export interface OpsListedOrder {
  orderId: string;
  state: string;
  reason: string;
}

export interface ProviderChangeInput {
  change: ProviderChangeFacts;
  orderIds: string[];
  rows: {
    orderId: string;
    state: string;
    /** The provider and the key fingerprint its last dispatch went out with (the dispatch fence). */
    dispatchProvider: string | null;
    dispatchCredentialFingerprint: string | null;
  }[];
  attempts: { orderId: string; provider: string | null }[];
  messages: { orderId: string }[];
  /** Requests (sends and lookups) the rotated provider's sandbox refused for their key (401). */
  refusedForKey: number;
  /** The ops command as an operator types it, and what it listed (null when it could not run). */
  opsCommand: string;
  opsListing: OpsListedOrder[] | null;
  opsFailure: string | null;
}

export interface ProviderChangeSection {
  drained: string;
  rotated: string;
  steps: ProviderChangeFacts['steps'];
  rolledWorkers: number;
  stoppedBy: string | null;
  /** Orders a draining destination can verify, and how many of them got no mail. */
  verifiableByDraining: number;
  /** Orders whose last send went to the rotated provider under its new key. */
  sentUnderNewKey: number;
  missingAmongVerifiable: string[];
  twoOrMore: string[];
  /** Customers without a mail outside that set: what the ops command must list. */
  rest: string[];
  opsCommand: string;
  opsListing: OpsListedOrder[] | null;
  opsFailure: string | null;
  refusedForKey: number;
}

export function buildProviderChangeSection(input: ProviderChangeInput): ProviderChangeSection {
  const mails = new Map<string, number>();
  for (const message of input.messages) mails.set(message.orderId, (mails.get(message.orderId) ?? 0) + 1);
  const verifiable = new Set<string>();
  for (const attempt of input.attempts) {
    if (attempt.provider === input.change.drained) verifiable.add(attempt.orderId);
  }
  for (const row of input.rows) {
    if (
      row.dispatchProvider === input.change.rotated &&
      row.dispatchCredentialFingerprint === input.change.oldKeyFingerprint
    )
      verifiable.add(row.orderId);
  }
  const missing = input.orderIds.filter((orderId) => (mails.get(orderId) ?? 0) === 0);
  return {
    drained: input.change.drained,
    rotated: input.change.rotated,
    steps: input.change.steps,
    rolledWorkers: input.change.rolledWorkers,
    stoppedBy: input.change.stoppedBy,
    verifiableByDraining: verifiable.size,
    sentUnderNewKey: input.rows.filter(
      (row) =>
        row.dispatchProvider === input.change.rotated &&
        row.dispatchCredentialFingerprint === input.change.newKeyFingerprint,
    ).length,
    missingAmongVerifiable: missing.filter((orderId) => verifiable.has(orderId)),
    twoOrMore: input.orderIds.filter((orderId) => (mails.get(orderId) ?? 0) >= 2),
    rest: missing.filter((orderId) => !verifiable.has(orderId)),
    opsCommand: input.opsCommand,
    opsListing: input.opsListing,
    opsFailure: input.opsFailure,
    refusedForKey: input.refusedForKey,
  };
}

export function providerChangeInvariants(
  section: ProviderChangeSection,
  orderIds: string[],
): InvariantResult[] {
  const ours = new Set(orderIds);
  const listed = (section.opsListing ?? []).filter((entry) => ours.has(entry.orderId));
  const listedIds = new Set(listed.map((entry) => entry.orderId));
  const rest = new Set(section.rest);
  const listingDiffers =
    section.opsListing === null
      ? [`${section.opsCommand} did not run: ${section.opsFailure ?? 'no listing'}`]
      : [
          ...section.rest
            .filter((orderId) => !listedIds.has(orderId))
            .map((orderId) => `${orderId}: no mail, not listed`),
          ...[...listedIds]
            .filter((orderId) => !rest.has(orderId))
            .map(
              (orderId) =>
                `${orderId}: listed, but ${section.missingAmongVerifiable.includes(orderId) ? 'verifiable by a draining destination' : 'its customer has a mail'}`,
            ),
          ...listed
            .filter((entry) => entry.reason.trim() === '')
            .map((entry) => `${entry.orderId}: listed without a reason`),
        ];
  const done = section.steps.some((step) => step.step === 'rotation-done');
  return [
    judged(
      'provider-change-done',
      `${section.drained} drained and ${section.rotated}'s key rotated as the docs say, every roll's workers started`,
      section.stoppedBy !== null
        ? [`stopped: ${section.stoppedBy}`]
        : done
          ? []
          : ['the rotation did not reach its end'],
    ),
    judged(
      'provider-change-no-two-mails',
      'no customer got two mails across the drain and the key rotation',
      section.twoOrMore,
    ),
    judged(
      'draining-verifiable-all-mailed',
      `every order a draining destination can verify (an attempt at ${section.drained}, or sent under ` +
        `${section.rotated}'s old key) has its mail`,
      section.missingAmongVerifiable,
    ),
    judged(
      'ops-lists-the-rest',
      `"${section.opsCommand}" lists exactly the other customers without a mail, each with its reason`,
      listingDiffers,
    ),
    judged(
      'revoked-key-unused',
      `no request reached ${section.rotated} with a key it did not hold (its old key after revocation)`,
      section.refusedForKey === 0 ? [] : [`${section.refusedForKey} request(s) refused 401`],
    ),
  ];
}
