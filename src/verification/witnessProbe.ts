// A witness on demand for quiet periods, sent in the background: docs/providers.md, "A witness on demand".
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
  /** MAIL_WITNESS_SINK_ADDRESS (docs/operating.md, "Witness probes"). */
  sinkAddress: string;
  /** At most one probe per destination per interval, across workers. */
  intervalMs: number;
}

export interface WitnessProber {
  /** Returns at once; sends nothing when a witness is already coming or the interval has not passed. */
  request(input: { orderId: string; destination: SendDestination; attemptEndedAt: Date }): void;
  /** For shutdown: drops probes waiting for their attempt's end, waits for those under way. */
  settled(): Promise<void>;
}

/** The identity a probe carries where an order's id would be: never a number, so never an order's. */
export function probeIdentity(deploymentId: string, uuid: string = randomUUID()) {
  return { probeId: `witness-probe-${uuid}`, sendKey: `witness-probe/${deploymentId}/${uuid}` };
}

/** The same shape as a confirmation (text and HTML, sender, subject). */
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
    sendKey: input.sendKey,
    to: input.sinkAddress,
    from: input.identity.from,
    replyTo: null,
    subject: `Witness probe ${input.probeId}`,
    text,
    html: `<!doctype html><html><body><p>${text}</p></body></html>`,
  };
}

class ProbeNotDue extends Error {
  override readonly name = 'ProbeNotDue';
  constructor(readonly why: 'early' | 'rate-limited') {
    super(why);
  }
}

/** An attempt further from its end is asked about again later. */
const MAX_WAIT_FOR_END_MS = 120_000;

/** How long a probe waits for a pooled connection before giving up (nothing sent). */
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
    // A probe before the attempt's end proves nothing: it leaves at the end.
    const untilEnd = await millisecondsUntil(deps.db, input.attemptEndedAt);
    if (untilEnd > MAX_WAIT_FOR_END_MS) return;
    if (untilEnd > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, untilEnd + 50);
        closing.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
    if (closing.signal.aborted) return;
    // An accepted send after the end, still too young (Mailgun's threshold), will be the witness.
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
