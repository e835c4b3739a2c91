// "The provider is gone for a while", for both sandboxes: stop listening (connects get ECONNREFUSED), cut the
// sessions a pooled client could otherwise slip through on, and listen again on the same port when the window
// ends. One implementation, so the HTTP and the SMTP sandbox refuse, reopen and close the same way.
import type { Server } from 'node:net';

/** A port taken by someone else during the window is tried again this often before whenListening() rejects. */
const REBIND_ATTEMPTS = 10;
const REBIND_DELAY_MS = 200;

export class RefusalWindow {
  private timer: NodeJS.Timeout | null = null;
  private listening: Deferred = resolvedDeferred();
  private refusingNow = false;
  private closed = false;

  constructor(
    private readonly server: Server,
    private readonly options: {
      host: string;
      port: () => number;
      /** Ends the open sessions that closing the listener leaves open. */
      cutSessions: () => void;
      closedError: () => Error;
      invalidError: (message: string) => Error;
    },
  ) {}

  /** True from refuseFor() until the server listens again. */
  get refusing(): boolean {
    return this.refusingNow;
  }

  async refuseFor(ms: number): Promise<void> {
    if (!Number.isInteger(ms) || ms <= 0) {
      throw this.options.invalidError('refuseConnectionsFor: ms must be a positive integer.');
    }
    if (this.closed) throw this.options.closedError();
    if (this.timer !== null) clearTimeout(this.timer);
    if (!this.refusingNow) {
      this.refusingNow = true;
      this.listening = createDeferred();
    }
    if (this.server.listening) {
      this.server.close();
      this.options.cutSessions();
      // The listening socket is released when libuv runs its close; one macrotask later connects are refused.
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.timer = setTimeout(() => this.reopen(1), ms);
  }

  whenListening(): Promise<void> {
    if (this.closed) return Promise.reject(this.options.closedError());
    return this.listening.promise;
  }

  /** For the sandbox's close(): no reopening after this, and whoever waits for one is told why. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.listening.reject(this.options.closedError());
  }

  private reopen(attempt: number): void {
    this.timer = null;
    const deferred = this.listening;
    listen(this.server, this.options.port(), this.options.host).then(
      () => {
        // close() ran while the port was being bound: it found nothing listening, so stop here.
        if (this.closed) return void this.server.close();
        this.refusingNow = false;
        deferred.resolve();
      },
      (error: unknown) => {
        if (this.closed) return;
        if (attempt < REBIND_ATTEMPTS) {
          this.timer = setTimeout(() => this.reopen(attempt + 1), REBIND_DELAY_MS);
          return;
        }
        // Still refusing: a later refuseFor() tries again with a fresh promise.
        this.refusingNow = false;
        deferred.reject(error);
      },
    );
  }
}

export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

function createDeferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting when the sandbox closes during a refusal; that must not be an unhandled rejection.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

function resolvedDeferred(): Deferred {
  const deferred = createDeferred();
  deferred.resolve();
  return deferred;
}
