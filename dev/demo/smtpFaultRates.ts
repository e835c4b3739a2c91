// The runner's fault flags, read for the SMTP transport (`--transport smtp`): each HTTP fault becomes the SMTP
// fault with the same meaning for the customer, so one mix drives either sandbox. The table is in USAGE too.
import type { SmtpFaultRate } from '../../packages/sandbox/src/smtp/smtpFaults';
import { HANG_MS, SLOW_MS } from './profiles';
import type { FaultMix } from './runOptions';

export function smtpFaultRates(mix: FaultMix): SmtpFaultRate[] {
  const rates: SmtpFaultRate[] = [
    // The relay kept the message, then the socket closed before its 250: the ambiguity this product exists for.
    { fault: { kind: 'drop-after-data' }, probability: mix.acceptThenDrop },
    { fault: { kind: 'hang-after-data', ms: HANG_MS }, probability: mix.hang },
    // "451 local error in processing" after the data: the relay did not keep it (SMTP has no processed-5xx).
    { fault: { kind: 'reply', at: 'end-of-data', code: 451 }, probability: mix.serverError },
    // Greylisting, SMTP's "try again later".
    { fault: { kind: 'reply', at: 'rcpt', code: 451 }, probability: mix.tooManyRequests },
    { fault: { kind: 'reply', at: 'greeting', code: 421 }, probability: mix.unavailable },
    { fault: { kind: 'drop-before-data' }, probability: mix.dropWithoutProcessing },
    // A slow relay: the 250 comes well inside the reply timeout, so nothing goes wrong but the wait.
    { fault: { kind: 'hang-after-data', ms: SLOW_MS }, probability: mix.slow },
  ];
  return rates.filter((entry) => entry.probability > 0);
}
