// BIGINT ids travel as decimal strings: a number loses precision above 2^53. Pure.

const MAX_BIGINT = 9223372036854775807n;
const DECIMAL_DIGITS = /^[1-9][0-9]{0,18}$/;

export class InvalidOrderIdError extends Error {
  override readonly name = 'InvalidOrderIdError';
  readonly code = 'ERR_INVALID_ORDER_ID';
}

/** Returns the canonical decimal string of a valid order id, or throws InvalidOrderIdError. */
export function parseOrderId(input: unknown): string {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) throw invalid(input, 'must be a safe integer when passed as a number');
    text = String(input);
  } else if (typeof input === 'bigint') {
    text = input.toString();
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    throw invalid(input, 'must be a string, number or bigint');
  }
  if (!DECIMAL_DIGITS.test(text))
    throw invalid(input, 'must be a positive integer without sign, spaces or leading zeros');
  if (BigInt(text) > MAX_BIGINT)
    throw invalid(input, 'is larger than the largest BIGINT (9223372036854775807)');
  return text;
}

function invalid(input: unknown, why: string): InvalidOrderIdError {
  const shown = typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : String(input);
  return new InvalidOrderIdError(`Invalid order id ${shown}: it ${why}.`);
}
