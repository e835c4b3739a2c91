// A WITNESS ON DEMAND (docs/design.md §5, "What counts as evidence"; docs/providers.md, "A witness on demand").
// In a quiet period nothing is sent after an unknown attempt's end, so no freshness witness ever comes and the
// unknown waits for its deadline, then the policy decides. When the verify activity finds no witness at all,
// it asks for a probe: one normal send to the shop's sink address (MAIL_WITNESS_SINK_ADDRESS) on the attempt's
// own destination, with the same metadata shape, under an identity that is never an order id. Its only use is
// as a witness, by the same rule as any send (accepted after the attempt's end); any other outcome is recorded
// and counted, never retried and never verified. The probe's fence (src/db/witnessProbes.ts) makes one probe
// per destination per interval, across workers; it serves every unknown of the destination that ended before it.
//
// The probe goes on in the background: the verify activity returns at once, and the next ask finds the probe
// (accepted, and shown by the lookup) as its witness.
import { randomUUID } from 'node:crypto';
import { findWitnessCandidate } from '../db/freshnessWitness';
import type { Database } from '../db/pool';
import { destinationKey, millisecondsUntil, passProbeFence, recordProbeAnswer } from '../db/witnessProbes';
import { whyCannotAsk, type SendDestination } from '../evidence/destination';
import type { MailIdentity } from '../mail/confirmationMail';
import type { MailTransport, OutgoingMail } from '../mail/types';
import type { OrderMailMetrics, WitnessProbeOutcome } from '../metrics/orderMailMetrics';
import type { MailOutcome } from '../shared/mailOutcome';

export interface WitnessProbeSettings {
  /** MAIL_WITNESS_SINK_ADDRESS: a mailbox of the shop's that takes probes (docs/operating.md, "Witness probes"). */
  sinkAddress: string;
  /** MAIL_WITNESS_PROBE_INTERVAL_MS: at most one probe per destination per this many ms, across workers. */
  intervalMs: number;
}

export interface WitnessProber {
  /**
   * Asks for a probe of the destination, for an unknown of `orderId` that ended at `attemptEndedAt` (Postgres's
   * clock) and has no witness. Returns at once; nothing is sent when a send or probe already accepted after that
   * end is on its way to be a witness, when another probe of the destination left within the interval, or when
   * this worker has no transport to that very destination.
   */
  request(input: { orderId: string; destination: SendDestination; attemptEndedAt: Date }): void;
  /**
   * For shutdown (and tests): takes no more requests, drops a probe still waiting for its attempt's end, and
   * waits for the probes under way (their transport's deadline bounds them).
   */
  settled(): Promise<void>;
}

/** The identity a probe carries where an order's id would be: never a number, so never an order's. */
export function probeIdentity(deploymentId: string, uuid: string = randomUUID()) {
  return { probeId: `witness-probe-${uuid}`, sendKey: `witness-probe/${deploymentId}/${uuid}` };
}

/** Pure: a probe's mail. Short, plain, and the same shape as a confirmation (text and HTML, sender, subject). */
export function witnessProbeMail(input: {
  probeId: string;
  sendKey: string;
  sinkAddress: string;
  identity: MailIdentity;
}): OutgoingMail {
  const text =
    `Witness probe ${input.probeId} of the order confirmation mail service. It proves that the provider ` +
    'took mail again after an unknown outcome; no action is needed.';
  return {
    orderId: input.probeId,
    idempotencyKey: input.sendKey,
    to: input.sinkAddress,
    from: input.identity.from,
    replyTo: null,
    subject: `Witness probe ${input.probeId}`,
    text,
    html: `<!doctype html><html><body><p>${text}</p></body></html>`,
  };
}

/** Thrown by the probe's fence when it is not due; the transport then makes no request. */
class ProbeNotDue extends Error {
  override readonly name = 'ProbeNotDue';
  constructor(readonly why: 'early' | 'rate-limited') {
    super(why);
  }
}

/** A probe waits at most this long for the attempt's end; an attempt further from it is asked about later again. */
const MAX_WAIT_FOR_END_MS = 120_000;

/** How long a probe may wait for a connection of the transport's pool before it gives up (nothing sent). */
const CONNECTION_WAIT_MS = 5_000;

export function createWitnessProber(deps: {
  db: Database;
  settings: WitnessProbeSettings;
  transports: readonly MailTransport[];
  identityOf(provider: string): MailIdentity;
  deploymentId: string;
  workerIdentity: string;
  metrics?: OrderMailMetrics;
  log?: (message: string, fields: Record<string, unknown>) => void;
}): WitnessProber {
  const underWay = new Map<string, Promise<void>>();
  // Set by settled(): a probe still waiting for its attempt's end is dropped, one under way finishes.
  const closing = new AbortController();

  async function probe(input: {
    orderId: string;
    destination: SendDestination;
    attemptEndedAt: Date;
  }): Promise<void> {
    const { destination } = input;
    const transport = deps.transports.find(
      (candidate) =>
        candidate.destination !== undefined && whyCannotAsk(destination, candidate.destination) === null,
    );
    if (transport === undefined) return;
    // Asked before the attempt's end (its run saw the request end early, and asked a settle delay later): a probe
    // before the end proves nothing, so it leaves at the end, not at the next ask a settle delay on.
    const untilEnd = await millisecondsUntil(deps.db, input.attemptEndedAt);
    if (untilEnd > MAX_WAIT_FOR_END_MS) return;
    if (untilEnd > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, untilEnd + 50);
        closing.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    if (closing.signal.aborted) return;
    // An accepted send or probe after the attempt's end that is not old enough yet (Mailgun's threshold) will be
    // the witness: another probe would only cost.
    const coming = await findWitnessCandidate(deps.db, {
      orderId: input.orderId,
      destination,
      bounds: { dispatchedFrom: input.attemptEndedAt, endedBy: null },
    });
    if (coming !== null) return;
    const { probeId, sendKey } = probeIdentity(deps.deploymentId);
    let fenced = false;
    let result;
    try {
      result = await transport.send(
        witnessProbeMail({
          probeId,
          sendKey,
          sinkAddress: deps.settings.sinkAddress,
          identity: deps.identityOf(destination.provider),
        }),
        {
          passFenceBy: performance.now() + CONNECTION_WAIT_MS,
          passFence: async () => {
            const fence = await passProbeFence(deps.db, {
              probe: {
                probeId,
                sendKey,
                destination,
                sendTimeoutMs: transport.deadlineAfterFenceMs,
                workerIdentity: deps.workerIdentity,
              },
              intervalMs: deps.settings.intervalMs,
              notBefore: input.attemptEndedAt,
            });
            if (fence !== 'passed') throw new ProbeNotDue(fence);
            fenced = true;
          },
        },
      );
    } catch (error) {
      if (error instanceof ProbeNotDue) {
        // Early: the attempt has not ended yet on Postgres's clock; its next ask asks again.
        if (error.why === 'rate-limited') count(destination.provider, 'rate_limited');
        return;
      }
      throw error;
    }
    if (!fenced) return; // No connection in time: no request was made, and nothing was recorded.
    const errorCode = result.outcome === 'accepted' ? null : result.errorCode;
    await recordProbeAnswer(deps.db, {
      probeId,
      outcome: result.outcome,
      httpStatus: result.httpStatus,
      errorCode,
    });
    count(destination.provider, result.outcome);
    deps.log?.('Witness probe sent', {
      probeId,
      provider: destination.provider,
      outcome: result.outcome,
      httpStatus: result.httpStatus,
    });
  }

  function count(provider: string, outcome: MailOutcome | WitnessProbeOutcome): void {
    deps.metrics?.witnessProbeFinished(provider, outcome);
  }

  return {
    request(input) {
      if (closing.signal.aborted) return;
      const key = destinationKey(input.destination);
      // One probe of a destination at a time in this worker; the fence takes care of the others.
      if (underWay.has(key)) return;
      const running = probe(input)
        .catch((error: unknown) => {
          // A probe is never retried: the next ask without a witness asks for another.
          deps.log?.('Witness probe failed', {
            provider: input.destination.provider,
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => underWay.delete(key));
      underWay.set(key, running);
    },
    async settled() {
      closing.abort();
      await Promise.allSettled([...underWay.values()]);
    },
  };
}
