// Faults the SMTP sandbox can inject into one SMTP transaction, and how it picks one: a fault queued for that
// order first, else a draw from the rate plan (seeded, so a run can be repeated).
//
// Which order a transaction belongs to is known at different points: the envelope id (`MAIL FROM ... ENVID=`,
// which the SMTP transport sets to the order's id, see src/mail/smtp/smtpMessage.ts) from MAIL on, the
// `X-Order-Id` header once the data is in. Before MAIL nothing names the order, so a greeting fault can only be
// queued for "the next connections" or drawn by rate.
import { seededRandom } from '../faults';

/** Answer `code` (4xx or 5xx) at one step instead of going on. At greeting the server closes afterwards. */
export interface ReplyFault {
  kind: 'reply';
  at: 'greeting' | 'mail' | 'rcpt' | 'end-of-data';
  code: number;
}
/** Keep the message (it counts as accepted), then close the socket instead of the final 250. */
export interface DropAfterDataFault {
  kind: 'drop-after-data';
}
/** Keep the message, then answer 250 only after `ms` (never, without `ms`, until the sandbox closes). */
export interface HangAfterDataFault {
  kind: 'hang-after-data';
  ms?: number;
}
/** Close the socket when the client sends DATA: the envelope was taken, no message ever was. */
export interface DropBeforeDataFault {
  kind: 'drop-before-data';
}

export type SmtpFault = ReplyFault | DropAfterDataFault | HangAfterDataFault | DropBeforeDataFault;

export interface SmtpFaultRate {
  fault: SmtpFault;
  /** 0..1; the rates add up to at most 1, and the rest of the transactions get no fault. */
  probability: number;
}

export class InvalidSmtpFaultError extends Error {
  override readonly name = 'InvalidSmtpFaultError';
  readonly code = 'ERR_SMTP_SANDBOX_INVALID_FAULT';
}

export function checkSmtpFault(fault: SmtpFault): SmtpFault {
  if (fault.kind === 'reply') {
    if (!Number.isInteger(fault.code) || fault.code < 400 || fault.code > 599) {
      throw new InvalidSmtpFaultError('reply: code must be a 4xx or 5xx SMTP reply code.');
    }
    if (!['greeting', 'mail', 'rcpt', 'end-of-data'].includes(fault.at)) {
      throw new InvalidSmtpFaultError('reply: at must be greeting, mail, rcpt or end-of-data.');
    }
  }
  if (fault.kind === 'hang-after-data' && fault.ms !== undefined) {
    if (!Number.isInteger(fault.ms) || fault.ms < 0) {
      throw new InvalidSmtpFaultError('hang-after-data: ms must be an integer >= 0.');
    }
  }
  return fault;
}

/** Per-order queues, a queue for the next connections' greetings, and a seeded rate plan. */
export class SmtpFaultChooser {
  private readonly byOrder = new Map<string, SmtpFault[]>();
  private readonly nextGreetings: ReplyFault[] = [];
  private rates: SmtpFaultRate[] = [];
  private readonly next: () => number;

  constructor(seed: number) {
    this.next = seededRandom(seed >>> 0 || 1);
  }

  queue(orderId: string, fault: SmtpFault): void {
    checkSmtpFault(fault);
    if (fault.kind === 'reply' && fault.at === 'greeting') {
      throw new InvalidSmtpFaultError('A greeting comes before any order is named: use queueGreetingFault.');
    }
    const queued = this.byOrder.get(orderId) ?? [];
    queued.push(fault);
    this.byOrder.set(orderId, queued);
  }

  queueGreeting(fault: ReplyFault): void {
    this.nextGreetings.push(checkSmtpFault(fault) as ReplyFault);
  }

  setRates(rates: SmtpFaultRate[]): void {
    const total = rates.reduce((sum, rate) => sum + rate.probability, 0);
    if (rates.some((rate) => !(rate.probability >= 0)) || total > 1 + 1e-9) {
      throw new InvalidSmtpFaultError('Fault probabilities must be >= 0 and add up to at most 1.');
    }
    rates.forEach((rate) => checkSmtpFault(rate.fault));
    this.rates = rates;
  }

  /** For a new connection: a queued greeting fault, else a drawn one if the draw is a greeting fault. */
  forGreeting(): ReplyFault | null {
    const queued = this.nextGreetings.shift();
    if (queued !== undefined) return queued;
    const greetingRates = this.rates.filter((rate) => isGreetingFault(rate.fault));
    const drawn = this.draw(greetingRates);
    return drawn === null ? null : (drawn as ReplyFault);
  }

  /** For a transaction, once its order is known (or null when it names none): queued first, else drawn. */
  forTransaction(orderId: string | null): SmtpFault | null {
    if (orderId !== null) {
      const queued = this.byOrder.get(orderId);
      const fault = queued?.shift();
      if (queued !== undefined && queued.length === 0) this.byOrder.delete(orderId);
      if (fault !== undefined) return fault;
    }
    return this.draw(this.rates.filter((rate) => !isGreetingFault(rate.fault)));
  }

  clear(): void {
    this.byOrder.clear();
    this.nextGreetings.length = 0;
    this.rates = [];
  }

  private draw(rates: SmtpFaultRate[]): SmtpFault | null {
    if (rates.length === 0) return null;
    let roll = this.next();
    for (const rate of rates) {
      if (roll < rate.probability) return rate.fault;
      roll -= rate.probability;
    }
    return null;
  }
}

function isGreetingFault(fault: SmtpFault): boolean {
  return fault.kind === 'reply' && fault.at === 'greeting';
}
