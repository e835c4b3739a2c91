// A typed client for the sandbox's control API, for processes that did not start the sandbox themselves
// (the demo, child-process tests).

import { Pool } from 'undici';
import type { Fault, FaultPlan } from './faults';
import type { ReceivedMessage, RequestRecord } from './records';

export interface SandboxControlClientOptions {
  /** Deadline for each control call. Default 5000 ms. */
  timeoutMs?: number;
}

export interface QueuedFault {
  orderId: string;
  fault: Fault;
  times?: number;
}

export interface SandboxControlClient {
  messages(orderId?: string): Promise<ReceivedMessage[]>;
  requests(): Promise<RequestRecord[]>;
  queueFaults(queue: QueuedFault[]): Promise<void>;
  queueFault(orderId: string, fault: Fault, times?: number): Promise<void>;
  setFaultPlan(plan: FaultPlan): Promise<void>;
  /** Resolves once the sandbox has stopped listening. */
  refuseConnectionsFor(ms: number): Promise<void>;
  /** Returns how many held requests were answered. */
  releaseHeld(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export class SandboxControlError extends Error {
  override readonly name = 'SandboxControlError';
  readonly code = 'ERR_SANDBOX_CONTROL';
  constructor(
    message: string,
    readonly status: number | null,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function createSandboxControlClient(
  sandboxUrl: string,
  options: SandboxControlClientOptions = {},
): SandboxControlClient {
  const timeoutMs = options.timeoutMs ?? 5000;
  const pool = new Pool(new URL(sandboxUrl).origin, {
    connections: 2,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let status: number;
    let text: string;
    try {
      const response = await pool.request({
        method,
        path,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.statusCode;
      text = await response.body.text();
    } catch (error) {
      throw new SandboxControlError(`Sandbox control call ${method} ${path} failed.`, null, { cause: error });
    }
    if (status !== 200) {
      throw new SandboxControlError(
        `Sandbox control call ${method} ${path} answered ${status}: ${text.slice(0, 200)}`,
        status,
      );
    }
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new SandboxControlError(
        `Sandbox control call ${method} ${path} answered malformed JSON.`,
        status,
        { cause: error },
      );
    }
  }

  return {
    async messages(orderId) {
      const query = orderId === undefined ? '' : `?orderId=${encodeURIComponent(orderId)}`;
      return (await call<{ messages: ReceivedMessage[] }>('GET', `/_sandbox/messages${query}`)).messages;
    },
    async requests() {
      return (await call<{ requests: RequestRecord[] }>('GET', '/_sandbox/requests')).requests;
    },
    async queueFaults(queue) {
      await call('POST', '/_sandbox/faults', { queue });
    },
    async queueFault(orderId, fault, times = 1) {
      await call('POST', '/_sandbox/faults', { queue: [{ orderId, fault, times }] });
    },
    async setFaultPlan(plan) {
      await call('POST', '/_sandbox/faults', { plan });
    },
    async refuseConnectionsFor(ms) {
      await call('POST', '/_sandbox/refuse', { ms });
    },
    async releaseHeld() {
      return (await call<{ released: number }>('POST', '/_sandbox/release', {})).released;
    },
    async reset() {
      await call('POST', '/_sandbox/reset', {});
    },
    async close() {
      await pool.close();
    },
  };
}
