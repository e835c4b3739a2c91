import type { Client } from '@temporalio/client';
import type { Database } from '../db/pool';

/** What every operator command works with; built by src/cli/ops.ts, or by tests over the real parts. */
export interface OpsContext {
  db: Database;
  /** A Temporal client bound to the namespace the order mail workflows run in. */
  client: Client;
  namespace: string;
  /** The task queue the workers poll; a retry past retention starts the workflow there. */
  taskQueue: string;
  /** Base URL of the Temporal Web UI, for links (e.g. http://localhost:8233). */
  uiBaseUrl: string;
  /**
   * Who is acting: the database login (session_user) the CLI runs as, for the reset's reason and identity. The
   * audit rows take it from the database themselves (migration 0057).
   */
  operator: string;
  /** MAIL_PROVIDERS as the ops environment names it (the workers' list), or null/absent when it names none. */
  configured?: readonly string[] | null;
}

/** A command that was understood but is not done, with an explanation for the operator. Nothing changed. */
export class OpsRefusal extends Error {
  override readonly name = 'OpsRefusal';
  constructor(
    readonly code:
      | 'UNKNOWN_ORDER'
      | 'NO_MAIL_LOG_ROW'
      | 'ALREADY_SENT'
      | 'SEND_IN_FLIGHT'
      | 'NOT_RESETTABLE'
      | 'CHANGED_MEANWHILE'
      | 'SECOND_LOOK_RESENT'
      | 'REASON_REQUIRED'
      | 'PROVIDER_NOT_CONFIGURED'
      | 'PROVIDER_DRAINING'
      | 'NOT_AN_OPERATOR'
      | 'NOT_HELD'
      | 'NOTHING_SELECTED'
      | 'TOO_MANY_ORDERS'
      | 'NO_SUCH_BULK_ACT'
      | 'BULK_ACT_RUNNING'
      | 'SELECTION_CHANGED',
    message: string,
  ) {
    super(message);
  }
}

export function requireReason(reason: string | undefined, command: string): string {
  const trimmed = reason?.trim() ?? '';
  if (trimmed === '') {
    throw new OpsRefusal(
      'REASON_REQUIRED',
      `${command} needs --reason "…": every operator act is recorded with who did it and why.`,
    );
  }
  return trimmed;
}
