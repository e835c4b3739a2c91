// The hold of a chaos run (`npm run chaos -- --hold-at S --hold-for S`): mid-run, an operator holds every
// send (src/ops/sendHold.ts, as `npm run ops -- hold` does it), waits, and resumes. The sandbox counts the send
// requests it received from hold's return to resume (lookups apart): the report holds that count to 0
// (report/scenarioInvariants.ts), and every order to one mail as ever.
import type { Client } from '@temporalio/client';
import { createDatabase } from '../../src/db/pool';
import { readSendHoldGauges } from '../../src/db/sendHolds';
import { OpsRefusal } from '../../src/ops/opsContext';
import { holdSends, releaseHeldRuns, resumeSends } from '../../src/ops/sendHold';
import type { SendHoldFacts } from './report/facts';
import type { DemoMailTarget } from './mailTarget';
import type { SendHoldSettings } from './runOptions';

/** Tries of one act while Postgres or Temporal restart (2 s apart): more than a restart takes. */
const ACT_TRIES = 30;

export interface SendHoldAct {
  /** Resolves once the hold was lifted and its runs signalled (or the act failed: the facts say so). */
  facts(): Promise<SendHoldFacts>;
}

export function startSendHoldAct(options: {
  settings: SendHoldSettings;
  databaseUrl: string;
  client: Client;
  mail: DemoMailTarget;
  startedAt: number;
  say: (line: string) => void;
}): SendHoldAct {
  const { settings, mail, say } = options;
  const since = () => Date.now() - options.startedAt;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
  const again = async <T>(work: () => Promise<T>): Promise<T> => {
    for (let tries = 1; ; tries++) {
      try {
        return await work();
      } catch (error) {
        if (tries >= ACT_TRIES || error instanceof OpsRefusal) throw error;
        say(`hold: ${error instanceof Error ? error.message : String(error)}; trying again`);
        await sleep(2_000);
      }
    }
  };
  const done = (async (): Promise<SendHoldFacts> => {
    // The demo's admin login stands in for an operator's own (docs/operating.md, "Who you are").
    const db = createDatabase({
      connectionString: options.databaseUrl,
      applicationName: 'order-mail-chaos-hold',
    });
    try {
      await sleep(settings.atMs - since());
      const holdAskedAtMs = since();
      // Postgres or Temporal may be restarting under the operator: each act is tried again (both are safe to
      // repeat: a hold already set is found, a resume after its hold was lifted signals what is left).
      const held = await again(() => holdSends(db, { scope: '*', reason: 'chaos: hold mid-run' }));
      const heldAtMs = since();
      const requestsAtHold = mail.requests().length;
      const lookupsAtHold = mail.verificationActivity().lookups;
      say(
        `hold: every send held after ${Math.round(held.waitedMs / 100) / 10} s; ` +
          `${held.inFlight.length} attempt(s) still in flight; resume in ${settings.forMs / 1000} s`,
      );
      await sleep(settings.forMs);
      // A request of an attempt hold listed as still in flight was dispatched before the hold: counted apart.
      const listed = new Set(held.inFlight.map((attempt) => attempt.orderId));
      const whileHeld = mail.requests().slice(requestsAtHold);
      const requestsDuringHold = whileHeld.filter((request) => !listed.has(request.orderId ?? '')).length;
      const requestsOfListedInFlight = whileHeld.length - requestsDuringHold;
      const lookupsDuringHold = mail.verificationActivity().lookups - lookupsAtHold;
      const heldOrders = (await again(() => readSendHoldGauges(db)))[0]?.heldOrders ?? 0;
      const resumeAskedAtMs = since();
      const ctx = { db, client: options.client };
      const resumed = await again(() =>
        resumeSends(ctx, { scope: '*', reason: 'chaos: resume' }).catch((error: unknown) => {
          if (error instanceof OpsRefusal && error.code === 'NOT_HELD') return releaseHeldRuns(ctx);
          throw error;
        }),
      );
      say(
        `resume: ${resumed.signalled.length} held run(s) signalled; ${requestsDuringHold} request(s) while held`,
      );
      return {
        holdAskedAtMs,
        heldAtMs,
        holdWaitedMs: held.waitedMs,
        inFlightAtHold: held.inFlight.map((attempt) => attempt.orderId),
        resumeAskedAtMs,
        resumedAtMs: since(),
        requestsDuringHold,
        requestsOfListedInFlight,
        lookupsDuringHold,
        heldOrdersAtResume: heldOrders,
        signalled: resumed.signalled.length,
        failure: null,
      };
    } catch (error) {
      return {
        holdAskedAtMs: null,
        heldAtMs: null,
        holdWaitedMs: null,
        inFlightAtHold: [],
        resumeAskedAtMs: null,
        resumedAtMs: null,
        requestsDuringHold: 0,
        requestsOfListedInFlight: 0,
        lookupsDuringHold: 0,
        heldOrdersAtResume: 0,
        signalled: 0,
        failure: error instanceof Error ? error.message : String(error),
      };
    } finally {
      await db.close();
    }
  })();
  return { facts: () => done };
}
