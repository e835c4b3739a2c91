// The mail target of `npm run chaos -- --failover`: two providers, each its own sandbox (postmark first, mailgun
// second, both verified by lookup), behind the one face the runner knows (DemoMailTarget), so its report and
// invariants count the customers' mails across both. Accept-then-drop on both throughout (the run's fault mix);
// mid-run the primary goes down for a window: connections refused, then 503s, then accept-then-drop on every
// request, a third of the window each.
import {
  startMailSandbox,
  DEFAULT_SANDBOX_API_KEY,
  type MailSandbox,
} from '../../packages/sandbox/src/mailSandbox';
import { faultRates } from './profiles';
import type { FaultMix } from './runOptions';
import type { DemoMailTarget } from './mailTarget';
import { DEMO_MAILGUN_DOMAIN, DEMO_WITNESS_SINK, isWitnessProbe } from './verificationTarget';

export const FAILOVER_PROVIDERS = ['postmark', 'mailgun'] as const;
export type FailoverProvider = (typeof FAILOVER_PROVIDERS)[number];

// Short next to the run's send deadlines, as in verificationTarget.ts. The deadline is longer than there: a
// 503 from Postmark is unknown (its table calls every 5xx so), and its "not found" needs a witness, a later
// send that Postmark accepts, which comes only once the outage is over and the skip window has ended.
const LOOKUP_TIMEOUT_MS = 2_000;
const VERIFY_DEADLINE_MS = 180_000;

export interface FailoverTarget extends DemoMailTarget {
  /** Each provider's sandbox: what it received is the report's per-provider count. */
  sandboxes: Record<FailoverProvider, MailSandbox>;
  /** Takes the primary down for `ms`: refused, then 503, then accept-then-drop on everything; then restores. */
  primaryOutage(ms: number, say: (line: string) => void): Promise<void>;
}

export async function startFailoverTarget(options: {
  faults: FaultMix;
  seed: number;
  settleDelayMs: number;
  /** How many failures in a row make new attempts skip a provider, and for how long. */
  skipAfterFailures: number;
  skipForMs: number;
}): Promise<FailoverTarget> {
  const plan = (seed: number) => ({ rates: faultRates(options.faults), seed });
  const primary = await startMailSandbox({ faultPlan: plan(options.seed), seed: options.seed });
  const second = await startMailSandbox({ faultPlan: plan(options.seed + 1), seed: options.seed + 1 });
  const sandboxes = { postmark: primary, mailgun: second };
  const verifyEnv = (prefix: string) => ({
    [`${prefix}_VERIFY_SETTLE_DELAY_MS`]: String(options.settleDelayMs),
    // Below the providers' documented figures on purpose: the sandbox plays a lag we choose.
    [`${prefix}_VERIFY_SETTLE_DELAY_OVERRIDE_REASON`]: 'the chaos sandbox indexes within its configured lag',
  });
  return {
    transport: 'http',
    address: `${primary.url} (postmark), ${second.url} (mailgun)`,
    messagesUrl: `${primary.url}/_sandbox/messages?orderId=1`,
    workerEnv: {
      MAIL_PROVIDERS: FAILOVER_PROVIDERS.join(','),
      POSTMARK_API_BASE_URL: primary.url,
      POSTMARK_API_KEY: DEFAULT_SANDBOX_API_KEY,
      MAILGUN_API_BASE_URL: second.url,
      MAILGUN_API_KEY: DEFAULT_SANDBOX_API_KEY,
      MAILGUN_DOMAIN: DEMO_MAILGUN_DOMAIN,
      MAIL_VERIFY: 'on',
      ...verifyEnv('POSTMARK'),
      ...verifyEnv('MAILGUN'),
      MAIL_VERIFY_LOOKUP_TIMEOUT_MS: String(LOOKUP_TIMEOUT_MS),
      MAIL_VERIFY_DEADLINE_MS: String(VERIFY_DEADLINE_MS),
      MAIL_WITNESS_SINK_ADDRESS: DEMO_WITNESS_SINK,
      MAIL_PROVIDER_SKIP_AFTER_FAILURES: String(options.skipAfterFailures),
      MAIL_PROVIDER_SKIP_FOR_MS: String(options.skipForMs),
    },
    sandboxes,
    messages: () =>
      FAILOVER_PROVIDERS.flatMap((provider) =>
        sandboxes[provider]
          .messages()
          .filter((message) => !isWitnessProbe(message.orderId))
          .map((message) => ({
            orderId: message.orderId,
            id: message.id,
            receivedAt: message.receivedAt,
            sendKey: message.sendKey ?? null,
            provider,
          })),
      ),
    requests: () =>
      FAILOVER_PROVIDERS.flatMap((provider) =>
        sandboxes[provider]
          .requests()
          .filter((request) => request.provider === provider && !isWitnessProbe(request.orderId))
          .map((request) => ({
            orderId: request.orderId,
            fault: request.fault === null ? null : `${provider}: ${describe(request.fault)}`,
          })),
      ),
    receiverOutage: async () => undefined,
    refuseConnectionsFor: async (ms) => {
      await Promise.all([primary.refuseConnectionsFor(ms), second.refuseConnectionsFor(ms)]);
    },
    whenListening: async () => {
      await Promise.all([primary.whenListening(), second.whenListening()]);
    },
    relaysSettled: async () => undefined,
    provider: 'postmark,mailgun',
    verifies: true,
    verificationActivity: () => {
      const lookups = [...primary.lookups(), ...second.lookups()];
      return {
        provider: 'postmark,mailgun',
        verifies: true,
        lookups: lookups.length,
        lookupFaults: lookups.filter((lookup) => lookup.fault !== null).length,
        webhookPosts: 0,
        webhookDuplicates: 0,
      };
    },
    webhookPostings: async () => null,
    async primaryOutage(ms, say) {
      const third = Math.max(1_000, Math.round(ms / 3));
      say(`failover: postmark down for ${Math.round(ms / 1000)} s: connections refused`);
      // refuseConnectionsFor resolves once the listener is closed; whenListening once it listens again.
      await primary.refuseConnectionsFor(third);
      await primary.whenListening();
      say('failover: postmark answers every send 503');
      primary.setFaultPlan({ rates: [{ fault: { kind: 'status', status: 503 }, probability: 1 }] });
      await new Promise((resolve) => setTimeout(resolve, third));
      say('failover: postmark accepts every send, then drops the connection');
      primary.setFaultPlan({ rates: [{ fault: { kind: 'accept-then-drop' }, probability: 1 }] });
      await new Promise((resolve) => setTimeout(resolve, third));
      primary.setFaultPlan(plan(options.seed + 2));
      say('failover: postmark is back (the run’s usual faults)');
    },
    close: async () => {
      await Promise.all([primary.close(), second.close()]);
    },
  };
}

function describe(fault: { kind: string; status?: number }): string {
  return fault.kind === 'status' ? String(fault.status) : fault.kind;
}
