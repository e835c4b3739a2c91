// The provider changes of `npm run chaos -- --provider-change`, done as docs/operating.md#draining-a-provider
// says, with every worker restarted one at a time (a rolling deployment):
//   1. at drainAtMs: postmark is retired: MAIL_PROVIDERS_DRAINING=postmark, one roll.
//   2. at rotateKeyAtMs: mailgun's key is rotated. A changed key is a new destination, so mailgun drains under
//      its old key; only one provider can drain at a time (one must take new orders), so postmark's drain
//      pauses (its settings never changed; nothing bound to it moves). When `npm run ops -- provider status`
//      shows nothing bound to mailgun, the account gets its new key beside the old one (both valid, as a real
//      provider has them during a rotation), the workers roll to it while mailgun still drains (so no worker
//      sends under either key meanwhile), the old key is revoked, and a last roll puts mailgun back to taking
//      new orders and postmark back to draining.
// What happened and when goes into the report (report/providerChangeReport.ts).
import { main as opsMain } from '../../src/cli/ops';
import { credentialFingerprint } from '../../src/evidence/destination';
import type { FailoverTarget } from './failoverTarget';
import type { ProviderChangeFacts, ProviderChangeStep } from './report/providerChangeFacts';

export type { ProviderChangeFacts, ProviderChangeStep };
import type { ProviderChangeSettings } from './runOptions';
import type { WorkerFleet } from './workerFleet';

export const DRAINED_PROVIDER = 'postmark';
export const ROTATED_PROVIDER = 'mailgun';
/** The rotated provider's new key at the sandbox; the old one is the run's usual key. */
export const ROTATED_KEY = 'sandbox-key-rotated';
const UNBOUND_POLL_MS = 2_000;

/** One step of the change, with when it was done (ms after the first order was started). */

export interface ProviderChange {
  facts(): ProviderChangeFacts;
  /** Resolves once the change is done or stopped. */
  done: Promise<void>;
}

/** Which env a provider-status call needs: the workers' provider settings and an operator's login. */
export interface OpsEnvironment {
  OPS_DATABASE_URL: string;
  TEMPORAL_ADDRESS: string;
  TEMPORAL_NAMESPACE: string;
  TEMPORAL_TASK_QUEUE: string;
  [name: string]: string;
}

/** Runs `npm run ops -- <argv> --json` through the CLI's entry point; its parsed JSON, or throws. */
export async function opsJson(argv: string[], env: Record<string, string>): Promise<unknown> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await opsMain([...argv, '--json'], env, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
  });
  if (code !== 0) throw new Error(`npm run ops -- ${argv.join(' ')} exited ${code}: ${err.join('\n')}`);
  return JSON.parse(out.join('\n')) as unknown;
}

export function startProviderChange(input: {
  settings: ProviderChangeSettings;
  target: FailoverTarget;
  workers: WorkerFleet;
  /** The workers' environment as started (MAIL_PROVIDERS, each provider's settings). */
  workerEnv: Record<string, string>;
  ops: OpsEnvironment;
  startedAt: number;
  stopped: () => boolean;
  say: (line: string) => void;
}): ProviderChange {
  const { settings, target, workers, say } = input;
  const oldKey = input.workerEnv.MAILGUN_API_KEY ?? '';
  const facts: ProviderChangeFacts = {
    drained: DRAINED_PROVIDER,
    rotated: ROTATED_PROVIDER,
    oldKeyFingerprint: credentialFingerprint(oldKey),
    newKeyFingerprint: credentialFingerprint(ROTATED_KEY),
    steps: [],
    rolledWorkers: 0,
    stoppedBy: null,
    revokedAtMs: null,
  };
  const since = () => Date.now() - input.startedAt;
  const mark = (step: ProviderChangeStep['step']) => facts.steps.push({ step, atMs: since() });
  const until = async (atMs: number) => {
    const wait = input.startedAt + atMs - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  };
  let opsEnv: Record<string, string> = { ...input.workerEnv, ...input.ops };
  const roll = async (change: Record<string, string>, what: string) => {
    say(`provider change: rolling the workers: ${what}`);
    opsEnv = { ...opsEnv, ...change };
    await workers.roll(change);
    facts.rolledWorkers = workers.rolled();
  };
  const boundToRotated = async (): Promise<number> => {
    const status = (await opsJson(['provider', 'status'], opsEnv)) as {
      bound: { provider: string; sending: number; failedBound: number; policySettled: number }[];
    };
    const entry = status.bound.find((bound) => bound.provider === ROTATED_PROVIDER);
    return entry === undefined ? 0 : entry.sending + entry.failedBound + entry.policySettled;
  };

  const run = async (): Promise<void> => {
    await until(settings.drainAtMs);
    if (input.stopped()) return;
    await roll({ MAIL_PROVIDERS_DRAINING: DRAINED_PROVIDER }, `${DRAINED_PROVIDER} draining`);
    mark('drain-rolled');

    await until(settings.rotateKeyAtMs);
    await roll(
      { MAIL_PROVIDERS_DRAINING: ROTATED_PROVIDER },
      `${ROTATED_PROVIDER} draining under its old key for its rotation (${DRAINED_PROVIDER}'s drain paused)`,
    );
    mark('rotation-drain-rolled');
    const deadline = Date.now() + settings.waitForUnboundMs;
    for (;;) {
      const bound = await boundToRotated();
      if (bound === 0) break;
      if (Date.now() > deadline) {
        facts.stoppedBy = `${bound} still bound to ${ROTATED_PROVIDER}'s old key after ${settings.waitForUnboundMs / 1000} s`;
        say(`provider change: ${facts.stoppedBy}; the key is not rotated`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, UNBOUND_POLL_MS));
    }
    mark('old-key-unbound');
    say(`provider change: provider status shows nothing bound to ${ROTATED_PROVIDER}`);
    target.sandboxes.mailgun.setApiKeys([oldKey, ROTATED_KEY]);
    mark('new-key-added');
    await roll({ MAILGUN_API_KEY: ROTATED_KEY }, `${ROTATED_PROVIDER}'s new key, still draining`);
    mark('new-key-rolled');
    target.sandboxes.mailgun.setApiKeys([ROTATED_KEY]);
    facts.revokedAtMs = since();
    mark('old-key-revoked');
    say(`provider change: ${ROTATED_PROVIDER}'s old key revoked`);
    await roll(
      { MAIL_PROVIDERS_DRAINING: DRAINED_PROVIDER },
      `${ROTATED_PROVIDER} taking new orders under its new key, ${DRAINED_PROVIDER} draining again`,
    );
    mark('rotation-done');
  };
  const done = run().catch((error: unknown) => {
    facts.stoppedBy = error instanceof Error ? error.message.split('\n')[0]! : String(error);
    facts.rolledWorkers = workers.rolled();
    say(`provider change stopped: ${facts.stoppedBy}`);
  });
  return { facts: () => facts, done };
}
