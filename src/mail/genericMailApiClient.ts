// A MailTransport for the generic JSON mail API (the shape the sandbox speaks): the shared HTTP request path
// with the generic adapter. Kept as its own entry point because tests and tools talk to the sandbox with it.

import { destinationOfMailApi } from '../evidence/destination';
import { createHttpMailTransport, transportOptionProblems } from './httpMailTransport';
import { apiKeyProblem, MailClientConfigError } from './providers/adapterSupport';
import { createGenericAdapter } from './providers/generic';
import type { SendOutcomeTable } from './sendOutcomeTable';
import type { MailTransport } from './types';

export { MailClientConfigError } from './providers/adapterSupport';

export interface GenericMailApiClientOptions {
  /** Origin plus an optional path prefix, e.g. `https://mail.example.com` or `http://127.0.0.1:4010/api`. */
  baseUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  connections: number;
  /** For an API whose statuses mean something other than the generic table says. */
  statusTable?: SendOutcomeTable;
}

export function createGenericMailApiClient(options: GenericMailApiClientOptions): MailTransport {
  // Every problem at once, and never the key itself.
  const keyProblem = apiKeyProblem(options.apiKey);
  const problems = [...(keyProblem === null ? [] : [keyProblem]), ...transportOptionProblems(options)];
  if (problems.length > 0) {
    throw new MailClientConfigError(`Invalid mail client options: ${problems.join('; ')}.`);
  }
  return createHttpMailTransport({
    ...options,
    adapter: createGenericAdapter({ apiKey: options.apiKey, statusTable: options.statusTable }),
    destination: destinationOfMailApi({
      provider: 'generic',
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
    }),
  });
}
