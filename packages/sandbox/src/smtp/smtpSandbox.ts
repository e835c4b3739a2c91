// A real SMTP server (smtp-server, from the nodemailer project) with faults injected on purpose, for the SMTP
// transport what mailSandbox.ts is for the HTTP ones. It counts every message it
// accepted (and optionally relays it to MailDev), so tests assert on what a relay actually took.

import { randomBytes } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';
import { RefusalWindow } from '../refusalWindow';
import { relayRawMessage, type RelayTarget } from '../relayToInbox';
import {
  InvalidSmtpFaultError,
  SmtpFaultChooser,
  type SmtpFault,
  type SmtpFaultRate,
  type ReplyFault,
} from './smtpFaults';

export interface SmtpSandboxOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** When set, the server offers AUTH PLAIN/LOGIN and requires these credentials. */
  auth?: { user: string; password: string };
  rates?: SmtpFaultRate[];
  seed?: number;
  /** Every accepted message is also relayed there (MailDev's SMTP port), as it was received. */
  relayTo?: RelayTarget;
  /** Advertise PIPELINING (default true): nodemailer then sends MAIL, RCPT and DATA without waiting. */
  offerPipelining?: boolean;
}

/** One message the sandbox accepted: it counts as delivered, whatever the client heard afterwards. */
export interface AcceptedSmtpMessage {
  /** The queue id in the 250 reply (or the one that would have been in it). */
  queueId: string;
  orderId: string | null;
  messageId: string | null;
  envelopeId: string | null;
  from: string;
  to: string[];
  subject: string | null;
  /** The message as received, CRLF line ends, dot-unstuffed. */
  raw: string;
  /** What happened after the message was kept: answered 250, dropped, or held. */
  ending: 'answered' | 'dropped' | 'held';
  /** When it was kept, ISO 8601. */
  receivedAt: string;
}

/** One transaction's fate, accepted or not, for assertions on retries. */
export interface SmtpTransactionRecord {
  orderId: string | null;
  fault: SmtpFault['kind'] | null;
  /** The reply code given at the step that ended the transaction, or 'dropped'/'held'/250. */
  result: number | 'dropped' | 'held';
  at: 'greeting' | 'mail' | 'rcpt' | 'data' | 'end-of-data';
}

export interface SmtpSandbox {
  readonly host: string;
  readonly port: number;
  queueFault(orderId: string, fault: SmtpFault): void;
  queueGreetingFault(fault: ReplyFault): void;
  setRates(rates: SmtpFaultRate[]): void;
  messages(): AcceptedSmtpMessage[];
  messagesFor(orderId: string): AcceptedSmtpMessage[];
  transactions(): SmtpTransactionRecord[];
  transactionsFor(orderId: string): SmtpTransactionRecord[];
  /**
   * The relay goes away for `ms`: every connection is cut (pooled ones too, so no client slips past on an old
   * session) and new ones are refused until it listens again on the same port.
   */
  refuseConnectionsFor(ms: number): Promise<void>;
  /** Resolves once the sandbox accepts connections (at once, unless it is refusing them). */
  whenListening(): Promise<void>;
  /** Resolves once every relay started so far has finished (tests wait on it before reading the inbox). */
  relaysSettled(): Promise<void>;
  /** Forgets messages, transactions and faults. */
  reset(): void;
  close(): Promise<void>;
}

/** What the transport puts in the envelope id and in a header, so the sandbox can tell which order it is. */
const ENVID_PREFIX = 'order-';

export async function startSmtpSandbox(options: SmtpSandboxOptions = {}): Promise<SmtpSandbox> {
  const host = '127.0.0.1';
  const faults = new SmtpFaultChooser(options.seed ?? 1);
  if (options.rates !== undefined) faults.setRates(options.rates);
  const accepted: AcceptedSmtpMessage[] = [];
  const records: SmtpTransactionRecord[] = [];
  const relays = new Set<Promise<void>>();
  const held = new Set<() => void>();
  // Faults chosen at MAIL, per session id, for the steps that follow.
  const pending = new Map<string, { orderId: string | null; fault: SmtpFault | null }>();

  const server: SMTPServer = new SMTPServer({
    secure: false,
    // Offered so that clients name the order in MAIL (`ENVID=`); smtp-server hides DSN unless told otherwise.
    hideDSN: false,
    hidePIPELINING: options.offerPipelining === false,
    disabledCommands: options.auth === undefined ? ['AUTH', 'STARTTLS'] : ['STARTTLS'],
    authOptional: options.auth === undefined,
    allowInsecureAuth: true,
    logger: false,
    // The transport's own socket timeout decides when a hang becomes "unknown"; the server waits longer.
    socketTimeout: 120_000,
    onAuth(auth, _session, callback) {
      if (auth.username === options.auth?.user && auth.password === options.auth?.password) {
        callback(null, { user: auth.username });
      } else {
        callback(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }));
      }
    },
    onConnect(_session, callback) {
      // A socket accepted just before a refusal window, and not yet a session the window could cut.
      if (refusal.refusing) return callback(replyError(421, 'Service not available'));
      const fault = faults.forGreeting();
      if (fault === null) return callback();
      records.push({ orderId: null, fault: 'reply', result: fault.code, at: 'greeting' });
      callback(replyError(fault.code, 'Service not available'));
    },
    onMailFrom(address, session, callback) {
      const orderId = orderIdFromEnvelope(address);
      const fault = faults.forTransaction(orderId);
      pending.set(session.id, { orderId, fault });
      if (fault?.kind === 'reply' && fault.at === 'mail') {
        records.push({ orderId, fault: fault.kind, result: fault.code, at: 'mail' });
        return callback(replyError(fault.code, 'Sender not accepted now'));
      }
      callback();
    },
    onRcptTo(_address, session, callback) {
      const { orderId, fault } = pending.get(session.id) ?? { orderId: null, fault: null };
      if (fault?.kind === 'reply' && fault.at === 'rcpt') {
        records.push({ orderId, fault: fault.kind, result: fault.code, at: 'rcpt' });
        return callback(replyError(fault.code, 'Recipient not accepted'));
      }
      if (fault?.kind === 'drop-before-data') {
        // The envelope arrived; the connection goes before any reply, so DATA is never answered.
        records.push({ orderId, fault: fault.kind, result: 'dropped', at: 'rcpt' });
        return destroySocket(server, session);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const chosen = pending.get(session.id) ?? { orderId: null, fault: null };
        pending.delete(session.id);
        const orderId = chosen.orderId ?? headerValue(raw, 'X-Order-Id');
        // A message that named no order at MAIL gets its fault now, by its header.
        const fault =
          chosen.orderId === null && chosen.fault === null ? faults.forTransaction(orderId) : chosen.fault;
        if (fault?.kind === 'drop-before-data') {
          // Too late to drop before DATA: drop without keeping the message, the nearest equivalent.
          records.push({ orderId, fault: fault.kind, result: 'dropped', at: 'data' });
          return destroySocket(server, session);
        }
        if (fault?.kind === 'reply') {
          // A MAIL/RCPT fault of a transaction that named its order only in the header: applied here instead.
          records.push({ orderId, fault: fault.kind, result: fault.code, at: 'end-of-data' });
          return callback(replyError(fault.code, 'Message not accepted'));
        }
        const message: AcceptedSmtpMessage = {
          queueId: newQueueId(),
          orderId,
          messageId: headerValue(raw, 'Message-ID'),
          envelopeId: session.envelope.dsn?.envid ?? null,
          from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          subject: headerValue(raw, 'Subject'),
          raw,
          ending: 'answered',
          receivedAt: new Date().toISOString(),
        };
        accepted.push(message);
        if (options.relayTo !== undefined) relay(options.relayTo, message);
        const answer = () => callback(null, `2.0.0 Ok: queued as ${message.queueId}`);
        if (fault?.kind === 'drop-after-data') {
          message.ending = 'dropped';
          records.push({ orderId, fault: fault.kind, result: 'dropped', at: 'end-of-data' });
          return destroySocket(server, session);
        }
        if (fault?.kind === 'hang-after-data') {
          message.ending = 'held';
          records.push({ orderId, fault: fault.kind, result: 'held', at: 'end-of-data' });
          const release = () => {
            held.delete(release);
            clearTimeout(timer);
            answer();
          };
          const timer = fault.ms === undefined ? undefined : setTimeout(release, fault.ms);
          held.add(release);
          return;
        }
        records.push({ orderId, fault: null, result: 250, at: 'end-of-data' });
        answer();
      });
    },
  });

  function relay(target: RelayTarget, message: AcceptedSmtpMessage): void {
    const sending = relayRawMessage(target, {
      from: message.from,
      to: message.to,
      raw: message.raw,
    })
      .then(() => undefined)
      .finally(() => relays.delete(sending));
    relays.add(sending);
  }

  // A client that vanishes mid-session is part of the job here, not an error to crash on.
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  // SMTPServer.close would end the server for good, so the window closes only the listener and cuts the
  // sessions by hand. A 250 still in a cut socket's buffer may be lost with it: an honest "unknown" for the client.
  const refusal = new RefusalWindow(server.server, {
    host,
    port: () => port,
    cutSessions: () => {
      for (const connection of connectionsOf(server)) connection._socket?.destroy();
    },
    closedError: () => new Error('The SMTP sandbox is closed.'),
    invalidError: (message) => new InvalidSmtpFaultError(message),
  });

  return {
    host,
    port,
    queueFault: (orderId, fault) => faults.queue(orderId, fault),
    queueGreetingFault: (fault) => faults.queueGreeting(fault),
    setRates: (rates) => faults.setRates(rates),
    messages: () => [...accepted],
    messagesFor: (orderId) => accepted.filter((message) => message.orderId === orderId),
    transactions: () => [...records],
    transactionsFor: (orderId) => records.filter((record) => record.orderId === orderId),
    refuseConnectionsFor: (ms) => refusal.refuseFor(ms),
    whenListening: () => refusal.whenListening(),
    async relaysSettled() {
      while (relays.size > 0) await Promise.allSettled([...relays]);
    },
    reset() {
      accepted.length = 0;
      records.length = 0;
      faults.clear();
    },
    close() {
      closing ??= (async () => {
        refusal.close();
        for (const release of [...held]) release();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        for (const connection of connectionsOf(server)) connection._socket?.destroy();
        await Promise.allSettled([...relays]);
      })();
      return closing;
    },
  };
}

function replyError(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

function orderIdFromEnvelope(address: SMTPServerAddress): string | null {
  const envid = address.args === false ? undefined : address.args.ENVID;
  return typeof envid === 'string' && envid.startsWith(ENVID_PREFIX)
    ? envid.slice(ENVID_PREFIX.length)
    : null;
}

/** The first occurrence of a header in the header block, unfolded; null when absent. */
function headerValue(raw: string, name: string): string | null {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const match = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(unfolded);
  return match?.[1]?.trim() ?? null;
}

function newQueueId(): string {
  return randomBytes(6).toString('hex').toUpperCase();
}

interface ServerConnection {
  id: string;
  _socket?: Socket;
}

// smtp-server has no public way to drop one session; its connection set is the only handle on the socket.
function connectionsOf(server: SMTPServer): ServerConnection[] {
  const connections = (server as unknown as { connections?: Set<ServerConnection> }).connections;
  return connections === undefined ? [] : [...connections];
}

function destroySocket(server: SMTPServer, session: SMTPServerSession): void {
  connectionsOf(server)
    .find((connection) => connection.id === session.id)
    ?._socket?.destroy();
}
