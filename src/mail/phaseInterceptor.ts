// Records how far a request got (docs/design.md §5): undici calls onRequestStart on a connected socket right
// before writing the head, never before a DNS, connect, TLS or queue failure.

import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';

// undici's own IncomingHttpHeaders (types/header.d.ts) is not exported from the package root.
type ResponseHeaders = Record<string, string | string[] | undefined>;

/** Filled in by phaseInterceptor while one request runs. Create one per call: it is not reusable. */
export interface SendPhaseState {
  started: boolean;
  abortedAtStart: boolean;
  /** The first final (>= 200) status; 1xx informational answers are not final. */
  status: number | null;
  /** The Retry-After header of that final response. */
  retryAfterHeader: string | null;
}

export function createSendPhaseState(): SendPhaseState {
  return { started: false, abortedAtStart: false, status: null, retryAfterHeader: null };
}

/** An interceptor for `dispatcher.compose(...)` that writes into `state` and otherwise changes nothing. */
export function phaseInterceptor(state: SendPhaseState): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => dispatch(options, new PhaseRecordingHandler(state, handler));
}

class PhaseRecordingHandler implements Dispatcher.DispatchHandler {
  constructor(
    private readonly state: SendPhaseState,
    private readonly next: Dispatcher.DispatchHandler,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.state.started = true;
    this.next.onRequestStart?.(controller, context);
    // An abort that arrived before dispatch (an already-fired signal) is applied inside the downstream
    // start callback; undici then returns without writing. Only after forwarding can we see it.
    this.state.abortedAtStart = controller.aborted;
  }

  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: ResponseHeaders,
    socket: Duplex,
  ): void {
    this.next.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: ResponseHeaders,
    statusMessage?: string,
  ): void {
    if (statusCode >= 200 && this.state.status === null) {
      this.state.status = statusCode;
      const retryAfter = headers['retry-after'];
      this.state.retryAfterHeader = (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null;
    }
    this.next.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.next.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: ResponseHeaders): void {
    this.next.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.next.onResponseError?.(controller, error);
  }
}
