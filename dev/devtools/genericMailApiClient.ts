// A MailTransport for the generic JSON mail API (the shape the sandbox speaks): the product's HTTP request path
// (src/mail/httpMailTransport.ts) with its generic adapter, built from a few options instead of the worker's
// config. Tests and tools (the plain loop of the benchmark) talk to the sandbox with it; the worker builds its
// transports in src/mail/createMailTransport.ts, so this lives with the tools.
import { destinationOfMailApi } from '../../src/evidence/destination';
import { createHttpMailTransport, transportOptionProblems } from '../../src/mail/httpMailTransport';
import { apiKeyProblem, MailClientConfigError } from '../../src/mail/providers/adapterSupport';
import { createGenericAdapter } from '../../src/mail/providers/generic';
import type { MailTransport } from '../../src/mail/types';

export { MailClientConfigError } from '../../src/mail/providers/adapterSupport';

export interface GenericMailApiClientOptions {
  /** Origin plus an optional path prefix, e.g. `https://mail.example.com` or `http://127.0.0.1:4010/api`. */
  baseUrl: string;
  apiKey: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  connections: number;
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
    adapter: createGenericAdapter({ apiKey: options.apiKey }),
    destination: destinationOfMailApi({
      provider: 'generic',
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
    }),
  });
}
