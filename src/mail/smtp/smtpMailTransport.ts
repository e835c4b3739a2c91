// The SMTP transport, classified by the phase it tracks itself; the fence is passed only once a connection is
// held: docs/smtp-and-inbox.md, "How the transport knows the phase".
import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { credentialFingerprint } from '../../evidence/destination';
import type { SendResult } from '../../shared/mailOutcome';
import { traceProviderRequest } from '../../tracing/mailSpan';
import {
  noConnectionInTime,
  openGate,
  type DispatchGate,
  type MailTransport,
  type OutgoingMail,
} from '../types';
import { classifySmtpAttempt, type SmtpAttempt } from './classifySmtpAttempt';
import { buildSmtpMessage, envelopeAddress, orderEnvelopeId } from './smtpMessage';

/** Holds the password. */
export interface SmtpConfig {
  host: string;
  port: number;
  secure: boolean;
  /** Without implicit TLS: require STARTTLS (default), use it when offered, or never (a loopback inbox). */
  starttls: 'require' | 'opportunistic' | 'off';
  user: string | null;
  password: string | null;
  poolSize: number;
  /** TCP, TLS, the greeting and AUTH, all before the fence. A failure here is always "not sent". */
  connectTimeoutMs: number;
  /** Silence on the socket; after the final '.' every firing is an unknown outcome, so keep it generous. */
  replyTimeoutMs: number;
  overallTimeoutMs: number;
}

export function createSmtpMailTransport(config: SmtpConfig): MailTransport {
  const idle: SMTPConnection[] = [];
  let open = 0;
  const waiting: (() => void)[] = [];
  let closed = false;

  /** A pooled connection, null to open one, or 'timed-out' before `until`. */
  async function takeSlot(until: number): Promise<SMTPConnection | null | 'timed-out'> {
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
      const waitMs = until - performance.now();
      if (waitMs <= 0) return 'timed-out';
      const woken = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          const index = waiting.indexOf(wake);
          if (index !== -1) waiting.splice(index, 1);
          resolve(false);
        }, waitMs);
        waiting.push(wake);
      });
      if (!woken) return 'timed-out';
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

  async function send(
    mail: OutgoingMail,
    gate: DispatchGate = openGate(config.overallTimeoutMs),
  ): Promise<SendResult> {
    // Built before anything is dispatched: a composition bug surfaces as a thrown error, not as an outcome.
    const message = await buildSmtpMessage(mail);
    const waitStartedAt = performance.now();
    const slot = await takeSlot(gate.passFenceBy);
    if (slot === 'timed-out') {
      return noConnectionInTime(
        `SMTP connection (SMTP_POOL_SIZE=${config.poolSize})`,
        performance.now() - waitStartedAt,
      );
    }

    // 1. Hold a connection: a pooled one, or a new one connected (and authenticated) now, before the fence.
    const attempt: SmtpAttempt = { phase: 'connect', error: null, response: null };
    let connection = slot;
    if (connection === null) {
      try {
        connection = await openConnection(config, attempt, gate.passFenceBy);
      } catch (error) {
        attempt.error = error;
        giveBack(null, false);
        return classifySmtpAttempt(attempt);
      }
    }

    // 2. The fence. Whatever it throws, no byte of this message was sent: the session is still clean.
    try {
      await gate.passFence();
    } catch (error) {
      giveBack(connection, true);
      throw error;
    }

    // 3. The transaction, under the overall deadline, which starts here and covers everything after the fence.
    const held = connection;
    return traceProviderRequest('mail.smtp.send', { provider: 'smtp', orderId: mail.orderId }, () =>
      transact(held, mail, message, attempt),
    );
  }

  async function transact(
    held: SMTPConnection,
    mail: OutgoingMail,
    message: Buffer,
    attempt: SmtpAttempt,
  ): Promise<SendResult> {
    attempt.phase = 'envelope';
    let deadline: NodeJS.Timeout | undefined;
    try {
      // Its 'end' is when the final '.' went out: the moment the relay may have the message.
      const body = Readable.from([message]);
      body.once('end', () => (attempt.phase = 'after-data'));
      const running = sendOn(held, mail, body);
      // After the deadline the send's own failure has nobody waiting for it.
      running.catch(() => undefined);
      const timedOut = new Promise<never>((_, reject) => {
        deadline = setTimeout(() => {
          held.close();
          reject(Object.assign(new Error('overall send deadline passed'), { code: 'ETIMEDOUT' }));
        }, config.overallTimeoutMs);
      });
      attempt.response = await Promise.race([running, timedOut]);
    } catch (error) {
      attempt.error = error;
    } finally {
      clearTimeout(deadline);
    }
    giveBack(held, attempt.error === null);
    return classifySmtpAttempt(attempt);
  }

  async function close(): Promise<void> {
    closed = true;
    for (const connection of idle.splice(0)) connection.quit();
  }

  // No lookup asks an SMTP relay, but the attempt still says where it went.
  const destination = {
    provider: 'smtp',
    origin: `smtp://${config.host}:${config.port}`,
    scope: null,
    credentialFingerprint: config.password === null ? null : credentialFingerprint(config.password),
  };
  return { deadlineAfterFenceMs: config.overallTimeoutMs, destination, send, close };
}

/** Connects and logs in before the fence deadline; a failure here is before the message: not sent. */
async function openConnection(
  config: SmtpConfig,
  attempt: SmtpAttempt,
  passFenceBy: number,
): Promise<SMTPConnection> {
  const limitMs = Math.max(0, Math.min(config.connectTimeoutMs, passFenceBy - performance.now()));
  const work = (async () => {
    const connection = await connect(config);
    attempt.phase = 'auth';
    try {
      if (config.user !== null) await login(connection, config.user, config.password ?? '');
    } catch (error) {
      connection.close();
      throw error;
    }
    return connection;
  })();
  let timer: NodeJS.Timeout | undefined;
  const tooLate = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // A connection that still arrives is closed as soon as it does.
      work.then((late) => late.close()).catch(() => undefined);
      const error = new Error(`connecting took longer than the ${Math.round(limitMs)} ms it may take`);
      reject(Object.assign(error, { code: 'ETIMEDOUT' }));
    }, limitMs);
  });
  try {
    return await Promise.race([work, tooLate]);
  } finally {
    clearTimeout(timer);
  }
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
