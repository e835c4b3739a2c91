// One SMTP send's observations into a SendResult (docs/smtp-and-inbox.md); pure.

import type { SendResult } from '../../shared/mailOutcome';
import { errorCodeOf } from '../classifySendAttempt';

export interface SmtpAttempt {
  /** Where the attempt got to: the connection/greeting/TLS, AUTH, the envelope and DATA, or past the final '.'. */
  phase: 'connect' | 'auth' | 'envelope' | 'after-data';
  error: unknown;
  /** The final reply on success, e.g. `250 2.0.0 Ok: queued as 4F3A2B`. */
  response: string | null;
}

export function classifySmtpAttempt(attempt: SmtpAttempt): SendResult {
  if (attempt.error === null) {
    return { outcome: 'accepted', httpStatus: 250, providerMessageId: queueIdOf(attempt.response ?? '') };
  }
  const { code, command, responseCode } = readError(attempt.error);
  const where = command === null ? attempt.phase : `${attempt.phase} (${command})`;

  if (responseCode !== null) {
    const transient = responseCode >= 400 && responseCode < 500;
    if (attempt.phase === 'auth' && !transient) {
      return {
        outcome: 'rejected',
        httpStatus: responseCode,
        errorCode: code,
        reason: `SMTP ${responseCode} at AUTH: the relay refused the credentials (check SMTP_USER and SMTP_PASSWORD)`,
      };
    }
    // A refused session says nothing about this message: try again later, like a refused connection.
    if (transient || attempt.phase === 'connect') {
      return {
        outcome: 'not_sent',
        httpStatus: responseCode,
        errorCode: code,
        reason: `SMTP ${responseCode} at ${where}: not accepted for now (transient)`,
        retryAfterMs: null,
      };
    }
    return {
      outcome: 'rejected',
      httpStatus: responseCode,
      errorCode: code,
      reason: `SMTP ${responseCode} at ${where}: the relay rejected the message`,
    };
  }

  if (attempt.phase === 'auth' && code === 'EAUTH') {
    // No reply code: nodemailer refused before asking (e.g. no credentials for the offered methods).
    return {
      outcome: 'rejected',
      httpStatus: null,
      errorCode: code,
      reason: 'SMTP AUTH could not be done: check SMTP_USER and SMTP_PASSWORD',
    };
  }
  if (attempt.phase === 'after-data') {
    return {
      outcome: 'unknown',
      httpStatus: null,
      errorCode: code,
      reason: `no reply after the message's final '.' (${code ?? 'error'}); the relay may have accepted it`,
    };
  }
  return {
    outcome: 'not_sent',
    httpStatus: null,
    errorCode: code,
    reason: `${code ?? 'error'} at ${where}, before the message's final '.': nothing was delivered`,
    retryAfterMs: null,
  };
}

function readError(error: unknown): {
  code: string | null;
  command: string | null;
  responseCode: number | null;
} {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as {
    command?: unknown;
    responseCode?: unknown;
  };
  const command =
    typeof fields.command === 'string' && /^[A-Z ]{1,20}$/.test(fields.command) ? fields.command : null;
  const responseCode =
    typeof fields.responseCode === 'number' && fields.responseCode >= 200 && fields.responseCode <= 599
      ? fields.responseCode
      : null;
  return { code: errorCodeOf(error), command, responseCode };
}

// Relays' documented queue-id shapes; nothing else is kept, so no address reaches the log (docs/smtp-and-inbox.md).
const QUEUE_ID_PATTERNS = [
  /^250[ -](?:2\.0\.0 )?Ok:? queued as ([A-Za-z0-9_-]{5,40})$/i, // Postfix, SendGrid, the sandbox
  /^250[ -](?:2\.0\.0 )?Ok ([0-9a-f]+(?:-[0-9a-f]+)+)$/i, // Amazon SES
  /^250[ -](?:2\.0\.0 )?OK id=([0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4})$/i, // Exim
  /^250[ -]2\.0\.0 ([0-9A-Za-z]{14}) Message accepted for delivery$/i, // Sendmail
  /^250[ -]2\.0\.0 OK +\d+ ([0-9A-Za-z.-]{8,80}) - gsmtp$/i, // Gmail
  /^250[ -]2\.6\.0 <[^<>]*> \[InternalId=(\d{6,24}),[^\]]*\] Queued mail for delivery/i, // Microsoft 365
];

/** Null when the reply has no known shape (the mail is still accepted). */
export function queueIdOf(response: string): string | null {
  const reply = response.trim();
  for (const pattern of QUEUE_ID_PATTERNS) {
    const id = pattern.exec(reply)?.[1];
    if (id !== undefined && !id.includes('@')) return id;
  }
  return null;
}
