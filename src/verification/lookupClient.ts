// The one HTTP path of every provider lookup; safe to repeat, so unlike a send it is retried freely.
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
  /** Every page within one deadline: its own, or `deadline` (the verify try's) when sooner. */
  lookUp(query: LookupQuery, deadline?: AbortSignal): Promise<LookupResult>;
}

export interface LookupClientOptions {
  adapter: ProviderLookupAdapter;
  baseUrl: string;
  /** For the base URL's origin; the caller owns it and closes it (createLookupPool). */
  dispatcher: Dispatcher;
  timeoutMs: number;
}

/** A search result page is small; a much longer body is not an answer we can use. */
const MAX_LOOKUP_BODY_BYTES = 512 * 1024;

/** A send's answer is one page; a provider that keeps paging is not answering, and the read is incomplete. */
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
      // Followed only to the origin and prefix we asked, so our credential goes nowhere else.
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
      // One deadline for all pages: docs/providers.md, "The send key".
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

/** Apart from the sends' pool, so a lookup never takes the connection a send waits for. */
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
