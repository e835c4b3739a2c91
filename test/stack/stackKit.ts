// Shared set-up for the stack tests: a native stack per test file (dev/stack/stack.ts) in a temporary
// directory, the app's database, a client connected the way the order service connects, and /metrics read
// back as numbers.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { connectOrderMailClient } from '../../src/client';
import { createDatabase, type Database } from '../../src/db/pool';
import { startStack, type RunningStack, type StackOptions } from '../../dev/stack/stack';

export interface TestStack {
  stack: RunningStack;
  db: Database;
  client: Client;
  close(): Promise<void>;
}

/**
 * Starts a stack for one test file. Child output goes to log files in its directory (kept when
 * KEEP_STACK_LOGS=1, to look at a failure); DEBUG_STACK=1 echoes it.
 */
export async function startTestStack(options: Omit<StackOptions, 'directory'> = {}): Promise<TestStack> {
  const directory = await mkdtemp(path.join(tmpdir(), 'stack-test-'));
  const lines: string[] = [];
  const stack = await startStack({
    directory,
    echo: process.env.DEBUG_STACK === '1',
    log: (line) => lines.push(line),
    ...options,
  }).catch(async (error: unknown) => {
    await rm(directory, { recursive: true, force: true });
    throw new Error(`stack did not start (${lines.join('; ')})`, { cause: error });
  });
  const db = createDatabase({ connectionString: stack.databaseUrl, applicationName: 'stack test' });
  const client = await connectOrderMailClient({ env: clientEnvironment(stack) });
  return {
    stack,
    db,
    client,
    async close() {
      await client.connection.close();
      await db.close();
      await stack.stop();
      if (process.env.KEEP_STACK_LOGS !== '1') await rm(directory, { recursive: true, force: true });
    },
  };
}

/** The environment an order service (or `npm run start-mail`) would have to reach this stack. */
export function clientEnvironment(stack: RunningStack): Record<string, string> {
  const { connections } = stack;
  return {
    TEMPORAL_ADDRESS: connections.temporalAddress,
    TEMPORAL_NAMESPACE: connections.namespace,
    ...(connections.tls === undefined
      ? {}
      : {
          TEMPORAL_TLS_SERVER_CA_CERT_PATH: connections.tls.caCertFile,
          TEMPORAL_TLS_CLIENT_CERT_PATH: connections.tls.clientCertFile,
          TEMPORAL_TLS_CLIENT_KEY_PATH: connections.tls.clientKeyFile,
          TEMPORAL_TLS_SERVER_NAME: connections.tls.serverName,
        }),
  };
}

/** One sample of a Prometheus text exposition. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parsePrometheusText(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (match === null) continue;
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const label of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] ?? ''] = label[2] ?? '';
    }
    samples.push({ name, labels, value: Number(value) });
  }
  return samples;
}

/** Scrapes every worker's /metrics and adds up the samples of `name` whose labels include `labels`. */
export async function sumMetric(
  workerUrls: string[],
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  let total = 0;
  for (const url of workerUrls) {
    const response = await fetch(`${url}/metrics`);
    if (!response.ok) throw new Error(`${url}/metrics answered ${response.status}`);
    for (const sample of parsePrometheusText(await response.text())) {
      if (sample.name !== name) continue;
      if (Object.entries(labels).every(([key, value]) => sample.labels[key] === value)) total += sample.value;
    }
  }
  return total;
}

export function workerUrls(stack: RunningStack): string[] {
  return stack.workers?.workers.map((worker) => worker.httpUrl) ?? [];
}
