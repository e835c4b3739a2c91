// The one HTTP path of every provider lookup: a GET through an injected undici dispatcher, bounded by its own
// deadline, its body always read to the end (or dropped), answered as found / not found / inconclusive by the
// adapter, or as a failure worth retrying. It never throws for what the network or the provider did.
//
// A lookup is safe to repeat (it changes nothing at the provider), so unlike a send it may be retried freely;
// the verify activity's retry policy and its schedule-to-close deadline bound how long that goes on.

import { Pool, type Dispatcher } from 'undici';
import { readBoundedBody } from '../mail/readBoundedBody';
import type { LookupEntry } from '../evidence/lookupAnswer';
import type {
  LookupAnswer,
  LookupPage,
  LookupQuery,
  LookupRequest,
  ProviderLookupAdapter,
} from './providerLookup';

/** The adapter's facts, or 'failed' (worth asking again): src/evidence/lookupAnswer.ts. */
export type LookupResult = LookupAnswer;

export interface LookupClient {
  /**
   * Reads every page within one deadline: the client's own timeout from the call on, or `deadline` when it
   * comes first (the verify activity's, shared by all the lookups of one try).
   */
  lookUp(query: LookupQuery, deadline?: AbortSignal): Promise<LookupResult>;
}

export interface LookupClientOptions {
  adapter: ProviderLookupAdapter;
  /** The provider's base URL, as for sends: origin plus an optional path prefix. */
  baseUrl: string;
  /** For the base URL's origin; the caller owns it and closes it (createLookupPool). */
  dispatcher: Dispatcher;
  /** Deadline for the whole lookup, every page and body included. */
  timeoutMs: number;
}

/** A search result page is small; a much longer body is not an answer we can use. */
const MAX_LOOKUP_BODY_BYTES = 512 * 1024;

/**
 * How many pages one lookup reads at most. A send has a handful of attempts, so its answer is one page; a
 * provider that keeps handing out pages is not answering our question, and what was read is incomplete.
 */
const MAX_LOOKUP_PAGES = 20;

export function createLookupClient(options: LookupClientOptions): LookupClient {
  const { origin, pathPrefix } = splitBaseUrl(options.baseUrl);
  const { adapter } = options;
  const fetchPage = async (
    request: LookupRequest | { url: string; headers: Record<string, string> },
    query: LookupQuery,
    signal: AbortSignal,
  ): Promise<LookupResult | LookupPage> => {
    let path: string;
    if ('url' in request) {
      // A provider's own next-page URL (Mailgun's paging.next): followed only to the origin and path prefix
      // we asked, so our credential never goes anywhere else.
      const next = parseUrl(request.url);
      if (next === null || next.origin !== origin || !next.pathname.startsWith(`${pathPrefix}/`)) {
        return {
          kind: 'entries',
          filteredBy: 'send',
          complete: false,
          incompleteReason: 'the next page is elsewhere than the provider asked',
          entries: [],
        };
      }
      path = `${next.pathname}${next.search}`;
    } else {
      path = `${pathPrefix}${request.path}`;
    }
    let status: number;
    let headers: Dispatcher.ResponseData['headers'];
    let body: string | null;
    try {
      const response = await options.dispatcher.request({
        origin,
        method: 'GET',
        path,
        headers: request.headers,
        signal,
      });
      status = response.statusCode;
      headers = response.headers;
      body = await readBoundedBody(response.body, MAX_LOOKUP_BODY_BYTES);
    } catch (error) {
      return { kind: 'failed', reason: `lookup failed: ${describeError(error)}`, retryAfterMs: null };
    }
    if (status === 408 || status === 429 || status >= 500) {
      return {
        kind: 'failed',
        reason: `lookup answered HTTP ${status}`,
        retryAfterMs: retryAfterMs(headers['retry-after']),
      };
    }
    if (status >= 200 && status < 300 && body === null) {
      return {
        kind: 'failed',
        reason: `lookup answer was larger than ${MAX_LOOKUP_BODY_BYTES} bytes`,
        retryAfterMs: null,
      };
    }
    return adapter.readAnswer(status, body, query, request);
  };
  return {
    async lookUp(query, deadline) {
      // One deadline for all pages: a provider answering each page just in time must not hold the caller past
      // its own (the verify activity's start-to-close timeout, docs/design.md §6).
      const own = AbortSignal.timeout(options.timeoutMs);
      const signal = deadline === undefined ? own : AbortSignal.any([own, deadline]);
      // Every page is read before anything is judged: "not found" on page one says nothing about page two.
      const entries: LookupEntry[] = [];
      let filteredBy: LookupPage['filteredBy'] = 'send';
      let request: LookupPage['next'] = adapter.buildRequest(query);
      for (let page = 1; ; page += 1) {
        const answer: LookupResult | LookupPage = signal.aborted
          ? ({ kind: 'failed', reason: 'no answer within its deadline', retryAfterMs: null } as const)
          : await fetchPage(request, query, signal);
        // Past the deadline after some pages: what was read is an incomplete answer (it may still show ours).
        if (answer.kind === 'failed' && page > 1 && signal.aborted) {
          return {
            kind: 'entries',
            filteredBy,
            complete: false,
            incompleteReason: `the lookup's deadline passed after ${page - 1} pages; the rest was not read`,
            entries,
          };
        }
        if (answer.kind === 'failed') return answer;
        if (answer.kind === 'unanswerable') return answer;
        entries.push(...answer.entries);
        if (answer.kind === 'entries') return { ...answer, entries };
        filteredBy = answer.filteredBy;
        if (page >= MAX_LOOKUP_PAGES) {
          return {
            kind: 'entries',
            filteredBy: answer.filteredBy,
            complete: false,
            incompleteReason: `more than ${MAX_LOOKUP_PAGES} pages; the rest was not read`,
            entries,
          };
        }
        request = answer.next;
      }
    },
  };
}

function parseUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/**
 * The pool lookups go through: one per provider origin, apart from the sends' pool, so a lookup never takes
 * the connection a send is waiting for, and a send's deadlines never apply to a lookup. Close it on shutdown.
 */
export function createLookupPool(
  baseUrl: string,
  options: { connections: number; connectTimeoutMs: number; timeoutMs: number },
): Pool {
  return new Pool(splitBaseUrl(baseUrl).origin, {
    connections: options.connections,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
  });
}

function splitBaseUrl(baseUrl: string): { origin: string; pathPrefix: string } {
  const url = new URL(baseUrl);
  return { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, '') };
}

function retryAfterMs(value: string | string[] | undefined): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || !/^[0-9]{1,6}$/.test(text.trim())) return null;
  return Number(text.trim()) * 1000;
}

/** The error's name and code, never its message text: an undici message can quote the URL it tried. */
function describeError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'no answer within its deadline';
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.name} (${code})` : error.name;
  }
  return 'unexpected error';
}
