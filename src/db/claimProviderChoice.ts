// Failover's part in the claim: which provider the attempt about to be claimed goes to, by the pure rule
// (src/shared/providerChoice.ts), from the order's earlier attempts and the providers' shared health.
import {
  chooseProvider,
  type EarlierAttempt,
  type NoProviderChoice,
  type ProviderChoice,
} from '../shared/providerChoice';
import type { ClaimRequest, ClaimedProvider } from './claimRequest';
import type { MailLogRow } from './orderMailLog';
import type { Database } from './pool';
import { readProviderStandings } from './providerHealth';
import { runSql, sql } from './sql';

/**
 * The failover rule's answer for the attempt about to be claimed. The earlier attempts are the audit rows of
 * the current key, which only the statements that move the row write: the transition's fence (the row as read)
 * therefore also fences the history the choice was made from. Health is advisory and may change meanwhile.
 */
export async function choose(
  db: Database,
  request: ClaimRequest,
  earlier: EarlierAttempt[],
): Promise<ProviderChoice | NoProviderChoice> {
  const configured = request.providers ?? [];
  const draining = request.draining ?? [];
  // With one provider taking new attempts or none the rule has no choice to make: the health would be read
  // for nothing.
  const choosable = configured.filter((provider) => !draining.includes(provider)).length;
  const standings = choosable < 2 ? [] : await readProviderStandings(db);
  return chooseProvider({ configured, draining, earlier, standings });
}

/** The claim's answer when no provider may take the attempt: nothing is written. */
export function noProvider(choice: NoProviderChoice): {
  kind: 'no-provider';
  provider: string;
  explanation: string;
} {
  return { kind: 'no-provider', provider: choice.provider, explanation: choice.explanation };
}

export function isNoProvider(choice: ProviderChoice | NoProviderChoice): choice is NoProviderChoice {
  return choice.reason === 'bound-unconfigured' || choice.reason === 'all-draining';
}

export function claimedAt(choice: ProviderChoice): ClaimedProvider {
  return {
    provider: choice.provider,
    providerChoice: choice.provider === null ? null : choice.reason,
    providerExplanation: choice.explanation,
  };
}

/** The order's finished attempts under the row's current key, with the provider each went to. */
export async function earlierAttempts(db: Database, row: MailLogRow): Promise<EarlierAttempt[]> {
  const { rows } = await runSql<EarlierAttempt>(
    db,
    sql`SELECT attempt, provider, outcome FROM order_mail_attempts
         WHERE order_id = ${row.orderId} AND resend_count = ${row.resendCount}
         ORDER BY attempt`,
  );
  return rows;
}
