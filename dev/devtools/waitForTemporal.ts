import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, type ConnectionOptions } from '@temporalio/client';

const ATTEMPT_TIMEOUT_MS = 2_000;
const RETRY_DELAY_MS = 200;

/**
 * Waits until the frontend at `address` answers for `namespace`. The port opens before the namespace exists
 * (and before custom search attributes are written into it), so a TCP probe is not enough: this asks the
 * question the tests depend on. `hasFailed` lets the caller stop early when the server process died.
 */
export async function waitForTemporal(options: {
  address: string;
  namespace: string;
  deadline: number;
  hasFailed?: () => string | null;
  /** TLS, API key or headers, for a server that needs them. */
  connectionOptions?: Omit<ConnectionOptions, 'address'>;
}): Promise<void> {
  const { address, namespace, deadline, hasFailed, connectionOptions = {} } = options;
  let lastError: unknown;
  for (;;) {
    const failure = hasFailed?.() ?? null;
    if (failure !== null) throw new Error(failure);
    try {
      // An attempt must not outlive the deadline, or a short timeout would be silently stretched.
      await describeNamespaceOnce(
        { ...connectionOptions, address },
        namespace,
        Math.min(Date.now() + ATTEMPT_TIMEOUT_MS, deadline),
      );
      return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() + RETRY_DELAY_MS >= deadline) {
      const reason = lastError instanceof Error ? lastError.message : String(lastError);
      throw new Error(`Temporal at ${address} did not serve namespace "${namespace}" in time: ${reason}`);
    }
    await sleep(RETRY_DELAY_MS);
  }
}

async function describeNamespaceOnce(
  connectionOptions: ConnectionOptions,
  namespace: string,
  attemptDeadline: number,
): Promise<void> {
  const connectTimeout = attemptDeadline - Date.now();
  if (connectTimeout <= 0) throw new Error('deadline reached');
  const connection = await Connection.connect({ ...connectionOptions, connectTimeout });
  try {
    await connection.withDeadline(attemptDeadline, () =>
      connection.workflowService.describeNamespace({ namespace }),
    );
  } finally {
    await connection.close();
  }
}
