// The operator of the operator-chaos run (`npm run chaos -- --operators`): while orders flow under the usual
// faults, it does what an operator can do to random in-flight orders, at random moments, one act at a time
// (dev/demo/operatorTools.ts says how each is done). It keeps a log of every act and its outcome; the report
// (dev/demo/report/operatorReport.ts) counts them and knows from it which orders an operator asked to re-send.
//
// Acts on a running order's run: cancel, terminate, reset to the first or the last workflow task, ops retry,
// ops resolve (as sent or failed). Acts on a send activity in flight: pause (unpaused again within
// unpauseWithinMs), reset, update-options raising its maximum attempts. And a deliberate re-send of a sent
// order: ops resolve --as failed, then ops retry.
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { choose, NAMES, type Choice } from './operatorChoices';
import type { ActOutcome, OperatorActName, OperatorTools } from './operatorTools';
import type { OperatorActRecord } from './report/facts';
import type { OperatorSettings } from './runOptions';

export interface Operators {
  log(): OperatorActRecord[];
  /** One line for the progress bar. */
  status(): string;
  /** Stops choosing new acts, makes every follow-up now (unpauses, the retries of re-sends), and waits. */
  stop(): Promise<void>;
}

const ORDER_WORKFLOW = 'orderConfirmationMail';
const SEND_ACTIVITY = 'sendOrderMail';
/** Running runs are listed at most this often; between lists the operator works from the last one. */
const LIST_EVERY_MS = 1_000;
/** How many running orders it looks at for a send in flight before it gives that act up. */
const SEND_CANDIDATES = 8;
const UNPAUSE_TRIES = 10;

export function startOperators(options: {
  settings: OperatorSettings;
  tools: OperatorTools;
  client: Client;
  taskQueue: string;
  random: () => number;
  /** True once every order's start has been made: the flow is over when nothing runs any more. */
  startsFinished: () => boolean;
  say: (line: string) => void;
}): Operators {
  const { settings, tools, client, random } = options;
  const records: OperatorActRecord[] = [];
  const followUps: { dueAt: number; run: () => Promise<void> }[] = [];
  let stopped = false;
  let flowOver = false;
  let listed: { at: number; running: WorkflowExecutionInfo[] } = { at: 0, running: [] };

  const record = (
    act: OperatorActName,
    orderId: string,
    runId: string | null,
    outcome: ActOutcome,
    extra: Partial<OperatorActRecord> = {},
  ): ActOutcome => {
    records.push({
      act,
      orderId,
      runId,
      at: new Date().toISOString(),
      result: outcome.result,
      detail: outcome.detail,
      ...(outcome.result === 'refused' && outcome.message !== undefined ? { message: outcome.message } : {}),
      ...extra,
    });
    return outcome;
  };
  const query = (status: string): string =>
    `WorkflowType = "${ORDER_WORKFLOW}" AND TaskQueue = "${options.taskQueue}" AND ExecutionStatus = "${status}"`;

  const running = async (): Promise<WorkflowExecutionInfo[]> => {
    if (Date.now() - listed.at < LIST_EVERY_MS) return listed.running;
    const found: WorkflowExecutionInfo[] = [];
    for await (const info of client.workflow.list({ query: query('Running'), pageSize: 1_000 }))
      found.push(info);
    listed = { at: Date.now(), running: found };
    return found;
  };
  const pick = <T>(items: T[]): T | undefined => items[Math.floor(random() * items.length)];

  /** A running order whose send activity is in flight (or waiting for a retry), with that activity's id. */
  const sendInFlight = async (): Promise<{ info: WorkflowExecutionInfo; activityId: string } | null> => {
    const candidates = [...(await running())];
    for (let tries = 0; tries < SEND_CANDIDATES && candidates.length > 0; tries++) {
      const [info] = candidates.splice(Math.floor(random() * candidates.length), 1);
      const description = await client.workflow
        .getHandle(info!.workflowId, info!.runId)
        .describe()
        .catch(() => null);
      const send = description?.raw.pendingActivities?.find(
        (activity) => activity.activityType?.name === SEND_ACTIVITY,
      );
      if (send?.activityId) return { info: info!, activityId: send.activityId };
    }
    return null;
  };

  const later = (ms: number, run: () => Promise<void>): void => {
    followUps.push({ dueAt: Date.now() + ms, run });
  };

  const noTarget = (act: OperatorActName): void => {
    records.push({
      act,
      orderId: '',
      runId: null,
      at: new Date().toISOString(),
      result: 'refused',
      detail: 'NO_TARGET',
    });
  };

  const resolveRecord = (outcome: ActOutcome): Partial<OperatorActRecord> => {
    if (outcome.result !== 'done') return {};
    const act = outcome.output as { rowBefore?: Record<string, unknown> | null } | undefined;
    const before = act?.rowBefore;
    return {
      rowBefore:
        before == null
          ? null
          : {
              state: String(before.state),
              dispatchedAt: (before.dispatched_at as string | null | undefined) ?? null,
              claimToken: String(before.claim_token),
            },
    };
  };

  async function act(choice: Choice): Promise<void> {
    switch (choice) {
      case 'cancel':
      case 'terminate':
      case 'reset-first':
      case 'reset-last':
      case 'retry':
      case 'resolve': {
        const name = NAMES[choice];
        const target = pick(await running());
        if (target === undefined) return noTarget(name);
        const { workflowId, runId } = target;
        if (choice === 'cancel') record(name, workflowId, runId, await tools.cancel(workflowId, runId));
        else if (choice === 'terminate')
          record(name, workflowId, runId, await tools.terminate(workflowId, runId));
        else if (choice === 'reset-first')
          record(name, workflowId, runId, await tools.reset(workflowId, runId, 'FirstWorkflowTask'));
        else if (choice === 'reset-last')
          record(name, workflowId, runId, await tools.reset(workflowId, runId, 'LastWorkflowTask'));
        else if (choice === 'retry')
          record(
            name,
            workflowId,
            runId,
            await tools.opsRetry(workflowId, 'operator chaos: retry an order in flight'),
          );
        else {
          const as = random() < 0.5 ? 'sent' : 'failed';
          const outcome = await tools.opsResolve(
            workflowId,
            as,
            `operator chaos: resolve as ${as} while in flight`,
          );
          record(
            as === 'sent' ? 'ops-resolve-sent' : 'ops-resolve-failed',
            workflowId,
            runId,
            outcome,
            resolveRecord(outcome),
          );
        }
        listed.at = 0; // The act changed what runs.
        return;
      }
      case 'pause':
      case 'activity-reset':
      case 'update-options': {
        const name = NAMES[choice];
        const found = await sendInFlight();
        if (found === null) return noTarget(name);
        const target = {
          workflowId: found.info.workflowId,
          runId: found.info.runId,
          activityId: found.activityId,
        };
        const extra = { activityId: found.activityId };
        if (choice === 'pause') {
          const outcome = record(
            name,
            target.workflowId,
            target.runId,
            await tools.activity('pause', target),
            extra,
          );
          if (outcome.result === 'done') {
            // Unpaused within unpauseWithinMs; an unpause that failed (Temporal restarting) is tried again.
            const unpause = (tries: number) => async (): Promise<void> => {
              const result = record(
                'activity-unpause',
                target.workflowId,
                target.runId,
                await tools.activity('unpause', target),
                extra,
              );
              if (result.result === 'failed' && tries < UNPAUSE_TRIES) later(1_000, unpause(tries + 1));
            };
            later(random() * settings.unpauseWithinMs, unpause(1));
          }
        } else if (choice === 'activity-reset') {
          record(name, target.workflowId, target.runId, await tools.activity('reset', target), extra);
        } else {
          const attempts = 2 + Math.floor(random() * 4);
          record(
            name,
            target.workflowId,
            target.runId,
            await tools.raiseMaximumAttempts(target, attempts),
            extra,
          );
        }
        return;
      }
      case 'resend': {
        // A customer says the mail never came: the operator settles the sent row as failed, then retries.
        const completed: WorkflowExecutionInfo[] = [];
        for await (const info of client.workflow.list({ query: query('Completed'), pageSize: 200 })) {
          completed.push(info);
          if (completed.length >= 200) break;
        }
        const target = pick(completed);
        if (target === undefined) return noTarget('ops-resolve-failed');
        const { workflowId, runId } = target;
        const resolved = await tools.opsResolve(
          workflowId,
          'failed',
          'operator chaos: the customer says no mail came',
        );
        record('ops-resolve-failed', workflowId, runId, resolved, {
          ...resolveRecord(resolved),
          resend: true,
        });
        if (resolved.result === 'done') {
          later(200 + random() * 1_500, async () => {
            record(
              'ops-retry',
              workflowId,
              runId,
              await tools.opsRetry(workflowId, 'operator chaos: send it again, the customer never got it'),
              { resend: true },
            );
            listed.at = 0;
          });
        }
        return;
      }
    }
  }

  const runDue = async (all: boolean): Promise<void> => {
    const now = Date.now();
    const due = followUps.filter((followUp) => all || followUp.dueAt <= now);
    for (const followUp of due) followUps.splice(followUps.indexOf(followUp), 1);
    for (const followUp of due) await followUp.run();
  };

  const loop = (async () => {
    while (!stopped) {
      await new Promise((resolve) => setTimeout(resolve, settings.everyMs * (0.5 + random())));
      if (stopped) break;
      try {
        await runDue(false);
        if (flowOver) continue;
        if (options.startsFinished() && (await running()).length === 0) {
          // Every order has been started and nothing runs: the flow is over, and so is the operator's day.
          flowOver = true;
          const made = records.filter((entry) => entry.detail !== 'NO_TARGET').length;
          options.say(`operators: the flow is over; ${made} acts made so far`);
          continue;
        }
        await act(choose(random()));
      } catch (error) {
        // Temporal or Postgres restarting under the operator: that act is lost, the next one goes on.
        options.say(`operators: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  })();

  return {
    log: () => records,
    status() {
      const done = records.filter((entry) => entry.result === 'done').length;
      return `ops ${done}/${records.length}`;
    },
    async stop() {
      stopped = true;
      await loop;
      // Every paused send is unpaused and every re-send's retry made, now rather than never (a failed unpause
      // is tried again, a second apart, up to UNPAUSE_TRIES times).
      while (followUps.length > 0) {
        await runDue(true);
        if (followUps.length > 0) await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    },
  };
}
