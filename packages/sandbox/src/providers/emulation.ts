// What the sandbox needs to know to answer as one provider would: where it listens, how it checks the key,
// how a message looks in its request, and what its answers look like. The pipeline that uses these
// (mailApi.ts) is the same for every provider, faults included.
//
// The sandbox deliberately echoes what it was sent (the key presented, the address refused) in the free text
// of its error bodies, as some real providers do, so tests prove the client never copies error bodies into
// results, logs or workflow history.

import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderName } from '../providerFormats';
import type { ValidMessage } from '../messageValidation';
import type { ReceivedMessage } from '../records';

/** What a provider that signs whole requests (SES's SigV4) checks besides the headers. */
export interface SignedRequestFacts {
  method: string;
  /** Path and query, as the request line has them. */
  url: string;
  body: string;
  now: Date;
}

export interface ProviderAnswer {
  status: number;
  /** A JSON value, or null for an empty body. */
  body: unknown;
  headers?: Record<string, string>;
}

export type ParsedRequest =
  | { ok: true; message: ValidMessage; idempotencyKey: string | null }
  | { ok: false; orderId: string | null; answer: ProviderAnswer };

export interface ProviderEmulation {
  readonly name: ProviderName;
  /** Whether this provider's send endpoint is at `pathname` (any method). */
  servesPath(pathname: string): boolean;
  /** Null when the request carries the sandbox's key, else the provider's answer to a bad or missing one. */
  authenticate(
    headers: IncomingHttpHeaders,
    apiKey: string,
    request?: SignedRequestFacts,
  ): ProviderAnswer | null;
  parse(text: string, headers: IncomingHttpHeaders, pathname: string): ParsedRequest;
  /** The id the provider would give message number `sequence` (1, 2, …), `message` being what it accepted. */
  messageId(sequence: number, pathname: string, message?: ValidMessage): string;
  accepted(messageId: string, message: ValidMessage): ProviderAnswer;
  /** The provider's error body for `status`; `providerError` picks a documented error name or code. */
  error(status: number, providerError: string | undefined): ProviderAnswer;
  /** The provider's lookup of sent messages, for the providers that have one (lookups.ts). */
  readonly lookup?: LookupEmulation;
}

/**
 * A provider's search of the messages it accepted, answered from what the sandbox has indexed so far (the
 * lookups module hands in only messages past the indexing lag and inside the retention).
 */
export interface LookupEmulation {
  servesPath(pathname: string): boolean;
  /** Answers the search `url` over `indexed`, this provider's indexed messages; a bad query gets its error. */
  search(
    url: URL,
    indexed: ReceivedMessage[],
    options: SearchOptions,
  ): { matches: number; answer: ProviderAnswer };
  /** Whether its answers come in pages a client can follow (so a 'paginate' lie can be told). */
  readonly pages: boolean;
}

/** How a search is answered beyond the query: where the sandbox is, and what a lie does (lookupLies.ts). */
export interface SearchOptions {
  /** The sandbox's own origin as the client reached it, for next-page URLs. */
  origin: string;
  /** Entries per page, whatever the query asked for. */
  pageSize?: number;
  /** Answer with every indexed message, whatever the filter says. */
  ignoreFilter?: boolean;
  /** Messages to put into the answer although the filter does not match them. */
  mixIn?: ReceivedMessage[];
  /**
   * The time up to which `indexed` holds every message the sandbox took (now less the lag it applied): the
   * generic contract's watermark, or null for an answer without one (a reordering gateway that cannot say). A
   * provider that does not promise one ignores it.
   */
  watermark: Date | null;
}

/** The part of a header value a provider reads; repeated headers count as missing. */
export function singleHeader(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : null;
}

export function bearerToken(headers: IncomingHttpHeaders): string | null {
  const value = singleHeader(headers, 'authorization');
  const match = value === null ? null : /^Bearer (.+)$/.exec(value);
  return match ? match[1]! : null;
}

/** Fields of a JSON object body, or null. */
export function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

export function nonEmptyString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/** A UUID-shaped id made from a sequence number, as Postmark and Resend ids look. */
export function uuidFor(sequence: number): string {
  return `00000000-0000-4000-8000-${sequence.toString(16).padStart(12, '0')}`;
}
