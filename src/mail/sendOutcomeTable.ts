// The one place that says what an HTTP status from a mail API means (docs/design.md §5, docs/providers.md).
// Pure: no I/O, so the classifier, provider adapters and tests can share it.

import type { MailOutcome } from '../shared/mailOutcome';

export type StatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx';

/** Statuses onto outcomes: documented error names first, then status, then class (docs/providers.md, "Outcome tables"). */
export interface SendOutcomeTable {
  /** Shown nowhere but in tests and debugging: which table classified a status. */
  readonly name: string;
  /** How a failure reason names the provider: "HTTP 401 from Resend: …". */
  readonly label: string;
  readonly byProviderError: Readonly<Record<string, MailOutcome>>;
  readonly byStatus: Readonly<Partial<Record<number, MailOutcome>>>;
  readonly byClass: Readonly<Record<StatusClass, MailOutcome>>;
}

export const GENERIC_STATUS_TABLE: SendOutcomeTable = Object.freeze({
  name: 'generic',
  label: 'the mail API',
  byProviderError: Object.freeze({}),
  byStatus: Object.freeze({
    // The server did not receive a complete request (RFC 9110 §15.5.9): definitely not taken, worth retrying.
    408: 'not_sent',
    // Rate limited and refused (RFC 6585 §4); Retry-After says when to come back.
    429: 'not_sent',
    // "Cannot handle the request right now" (RFC 9110 §15.6.4). A provider whose 503 may follow processing
    // (or that sits behind a load balancer which emits 503 after forwarding) must list it as unknown.
    503: 'not_sent',
    // The method is not supported: a configuration error, never processed.
    501: 'rejected',
  } satisfies Partial<Record<number, MailOutcome>>),
  byClass: Object.freeze({
    // An informational status followed by nothing: the request was on the wire, so it may have been processed.
    '1xx': 'unknown',
    '2xx': 'accepted',
    // We never follow redirects for a POST: the origin pointed elsewhere without processing it.
    '3xx': 'rejected',
    // The provider refused the request; sending it again as is would be refused again.
    '4xx': 'rejected',
    // RFC 9110 does not say whether side effects happened before a 5xx (500, 502, 504, CDN 52x).
    '5xx': 'unknown',
  } satisfies Record<StatusClass, MailOutcome>),
});

/** `base` with the listed statuses and provider errors overridden. */
export function extendStatusTable(
  base: SendOutcomeTable,
  name: string,
  byStatus: Readonly<Partial<Record<number, MailOutcome>>>,
  extras: { label?: string; byProviderError?: Readonly<Record<string, MailOutcome>> } = {},
): SendOutcomeTable {
  return Object.freeze({
    name,
    label: extras.label ?? base.label,
    byProviderError: Object.freeze({ ...base.byProviderError, ...extras.byProviderError }),
    byStatus: Object.freeze({ ...base.byStatus, ...byStatus }),
    byClass: base.byClass,
  });
}

/** Every 5xx unknown where a lookup can settle it: docs/providers.md, "Outcome tables". */
export const LOOKUP_PROVIDER_STATUS_TABLE: SendOutcomeTable = extendStatusTable(
  GENERIC_STATUS_TABLE,
  'generic-with-lookup',
  { 501: 'unknown', 503: 'unknown' },
);

/** A status outside 100-599 is unknown: we cannot read it. */
export function outcomeForStatus(
  status: number,
  table: SendOutcomeTable = GENERIC_STATUS_TABLE,
  providerError: string | null = null,
): MailOutcome {
  if (providerError !== null && status >= 300) {
    const named = Object.hasOwn(table.byProviderError, providerError)
      ? table.byProviderError[providerError]
      : undefined;
    if (named !== undefined) return named;
  }
  const exact = table.byStatus[status];
  if (exact !== undefined) return exact;
  const statusClass = statusClassOf(status);
  return statusClass === null ? 'unknown' : table.byClass[statusClass];
}

function statusClassOf(status: number): StatusClass | null {
  if (!Number.isInteger(status)) return null;
  if (status >= 100 && status < 200) return '1xx';
  if (status >= 200 && status < 300) return '2xx';
  if (status >= 300 && status < 400) return '3xx';
  if (status >= 400 && status < 500) return '4xx';
  if (status >= 500 && status < 600) return '5xx';
  return null;
}
