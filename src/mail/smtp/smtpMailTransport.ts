// The SMTP transport: one message per send over a small pool of nodemailer SMTPConnections, classified by the
// phase the transport tracks itself (docs/smtp-and-inbox.md). It never throws for what the network or the
// relay did; a connection that saw any error is closed, never reused.

import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SendResult } from '../../shared/mailOutcome';
import type { MailTransport, OutgoingMail } from '../types';
import { classifySmtpAttempt, type SmtpAttempt } from './classifySmtpAttempt';
import { buildSmtpMessage, envelopeAddress, orderEnvelopeId } from './smtpMessage';

/** The SMTP part of the worker's configuration (src/config/loadConfig.ts). Holds the password. */
export interface SmtpConfig {
  host: string;
  port: number;
  /** Implicit TLS from the first byte (port 465). */
  secure: boolean;
  /** Without implicit TLS: require STARTTLS (default), use it when offered, or never (a loopback inbox). */
  starttls: 'require' | 'opportunistic' | 'off';
  user: string | null;
  password: string | null;
  poolSize: number;
  /** TCP, TLS and the greeting. A failure here is always "not sent". */
  connectTimeoutMs: number;
  /** Silence on the socket; after the final '.' every firing is an unknown outcome, so keep it generous. */
  replyTimeoutMs: number;
  /** Deadline for the whole send; must stay under the send activity's timeout. */
  overallTimeoutMs: number;
}

export function createSmtpMailTransport(config: SmtpConfig): MailTransport {
  const idle: SMTPConnection[] = [];
  let open = 0;
  const waiting: (() => void)[] = [];
  let closed = false;

  async function takeSlot(): Promise<SMTPConnection | null> {
    for (;;) {
      const reusable = idle.pop();
      if (reusable !== undefined) {
        reusable.removeListener('end', onIdleEnd);
        return reusable;
      }
      if (open < config.poolSize) {
        open += 1;
        return null;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  }

  function giveBack(connection: SMTPConnection | null, reusable: boolean): void {
    if (connection !== null && reusable && !closed) {
      // A relay closes idle sessions; such a connection leaves the pool instead of failing the next send.
      connection.once('end', onIdleEnd);
      idle.push(connection);
    } else {
      connection?.close();
      open -= 1;
    }
    waiting.shift()?.();
  }

  // One listener for every idle connection; `this` is the connection that ended.
  function onIdleEnd(this: SMTPConnection): void {
    forget(this);
  }

  function forget(connection: SMTPConnection): void {
    const index = idle.indexOf(connection);
    if (index === -1) return;
    idle.splice(index, 1);
    open -= 1;
    waiting.shift()?.();
  }

  async function send(mail: OutgoingMail): Promise<SendResult> {
    // Built before anything is dispatched: a composition bug surfaces as a thrown error, not as an outcome.
    const message = await buildSmtpMessage(mail);
    const pooled = await takeSlot();
    const attempt: SmtpAttempt = {
      phase: pooled === null ? 'connect' : 'envelope',
      error: null,
      response: null,
    };
    let connection = pooled;
    let deadline: NodeJS.Timeout | undefined;
    try {
      const run = async (): Promise<string> => {
        if (connection === null) {
          connection = await connect(config);
          attempt.phase = 'auth';
          if (config.user !== null) await login(connection, config.user, config.password ?? '');
        }
        attempt.phase = 'envelope';
        // SMTPConnection pipes this into the DATA stream only after 354, and writes the final '.' when it
        // ends: its 'end' is the moment the relay may have the message.
        const body = Readable.from([message]);
        body.once('end', () => (attempt.phase = 'after-data'));
        return sendOn(connection, mail, body);
      };
      const timedOut = new Promise<never>((_, reject) => {
        deadline = setTimeout(() => {
          connection?.close();
          reject(Object.assign(new Error('overall send deadline passed'), { code: 'ETIMEDOUT' }));
        }, config.overallTimeoutMs);
      });
      const running = run();
      // After the deadline the send's own failure has nobody waiting for it.
      running.catch(() => undefined);
      attempt.response = await Promise.race([running, timedOut]);
    } catch (error) {
      attempt.error = error;
    } finally {
      clearTimeout(deadline);
    }
    giveBack(connection, attempt.error === null);
    return classifySmtpAttempt(attempt);
  }

  async function close(): Promise<void> {
    closed = true;
    for (const connection of idle.splice(0)) connection.quit();
  }

  return { send, close };
}

function connect(config: SmtpConfig): Promise<SMTPConnection> {
  const connection = new SMTPConnection({
    host: config.host,
    port: config.port,
    secure: config.secure,
    requireTLS: !config.secure && config.starttls === 'require',
    ignoreTLS: !config.secure && config.starttls === 'off',
    connectionTimeout: config.connectTimeoutMs,
    greetingTimeout: config.connectTimeoutMs,
    socketTimeout: config.replyTimeoutMs,
  });
  // Errors also arrive through the callbacks below; this keeps a late one from crashing the worker.
  connection.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    // A failed connect is reported as an 'error' event, not through connect()'s callback.
    connection.once('error', reject);
    connection.connect((error) => {
      connection.removeListener('error', reject);
      if (error) reject(error);
      else resolve(connection);
    });
  });
}

function login(connection: SMTPConnection, user: string, pass: string): Promise<void> {
  return new Promise((resolve, reject) => {
    connection.login({ credentials: { user, pass } }, (error) => (error ? reject(error) : resolve()));
  });
}

function sendOn(connection: SMTPConnection, mail: OutgoingMail, body: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    connection.once('error', onError);
    connection.send(
      {
        from: envelopeAddress(mail.from),
        to: [mail.to],
        // Names the order in MAIL FROM when the relay offers DSN; nodemailer leaves it out otherwise.
        dsn: { envid: orderEnvelopeId(mail.orderId) },
      },
      body,
      (error, info) => {
        connection.removeListener('error', onError);
        if (error) reject(error);
        else resolve(String(info?.response ?? ''));
      },
    );
  });
}
