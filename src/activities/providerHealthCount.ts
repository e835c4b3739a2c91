// A send's word on its provider's health (docs/design.md "Failover"); best effort, a failed write is logged.
import { log } from '@temporalio/activity';
import { countProviderFailure, countProviderSuccess } from '../db/providerHealth';
import { describeDatabaseError } from '../db/pool';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import type { SendResult } from '../shared/mailOutcome';
import type { ActivityDependencies } from './dependencies';

/** 'failure': not taking mail (not sent after start, 429, 5xx); 'success': it answered; null: unknown. */
function healthSignalOf(result: SendResult): 'failure' | 'success' | null {
  if (result.outcome === 'not_sent') return 'failure';
  if (result.httpStatus !== null && result.httpStatus >= 500) return 'failure';
  if (result.outcome === 'accepted' || result.outcome === 'rejected') return 'success';
  return null;
}

export async function countSendAgainstProvider(
  deps: ActivityDependencies,
  input: { orderId: string; provider: string; result: SendResult },
): Promise<void> {
  const settings = deps.providerHealth;
  const signal = healthSignalOf(input.result);
  if (settings === undefined || signal === null) return;
  const metrics = deps.metrics ?? noOrderMailMetrics;
  try {
    if (signal === 'success') {
      await countProviderSuccess(deps.db, input.provider);
      return;
    }
    const { result } = input;
    const failure =
      ('errorCode' in result ? result.errorCode : null) ?? String(result.httpStatus ?? result.outcome);
    const counted = await countProviderFailure(deps.db, {
      provider: input.provider,
      failure,
      settings,
    });
    const skipStarted = counted.skipped && counted.consecutiveFailures === settings.skipAfterFailures;
    metrics.providerFailed(input.provider, skipStarted);
    if (skipStarted) {
      log.warn('Provider keeps failing; new attempts skip it for a while', {
        provider: input.provider,
        consecutiveFailures: counted.consecutiveFailures,
        skipForMs: settings.skipForMs,
      });
    }
  } catch (error) {
    log.warn('Could not count a send against its provider’s health', {
      orderId: input.orderId,
      provider: input.provider,
      error: describeDatabaseError(error),
    });
  }
}
