// A TCP proxy over loopback that a test can hold or cut, to put one worker process's connection (to Postgres,
// to Temporal) in a state no flag of the worker can: `hold` keeps every byte the client sends from reaching the
// server (a query on the wire that has not arrived yet) until `release`; `cut` drops every connection and
// refuses new ones (the worker is cut off from that server, though it runs on). Nothing is lost or reordered:
// held bytes go out in order on release.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface HoldableProxy {
  /** host:port to give the client instead of the server's. */
  readonly address: string;
  readonly port: number;
  hold(): void;
  release(): void;
  cut(): void;
  /** Bytes from the client held back right now. */
  heldBytes(): number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  connected: boolean;
  /** Client bytes not yet written upstream: while connecting, and while held. */
  pending: Buffer[];
}

export async function startHoldableProxy(target: { host: string; port: number }): Promise<HoldableProxy> {
  const pairs = new Set<Pair>();
  let holding = false;
  let cut = false;

  const flush = (pair: Pair): void => {
    if (!pair.connected || holding) return;
    for (const chunk of pair.pending.splice(0)) pair.upstream.write(chunk);
  };
  const drop = (pair: Pair): void => {
    pair.client.destroy();
    pair.upstream.destroy();
    pairs.delete(pair);
  };

  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair: Pair = { client, upstream, connected: false, pending: [] };
    pairs.add(pair);
    upstream.once('connect', () => {
      pair.connected = true;
      flush(pair);
    });
    client.on('data', (chunk: Buffer) => {
      pair.pending.push(chunk);
      flush(pair);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('close', () => drop(pair));
    upstream.on('close', () => drop(pair));
    client.on('error', () => drop(pair));
    upstream.on('error', () => drop(pair));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy is not on a TCP port');

  return {
    address: `127.0.0.1:${address.port}`,
    port: address.port,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const pair of pairs) flush(pair);
    },
    cut() {
      cut = true;
      for (const pair of [...pairs]) drop(pair);
    },
    heldBytes() {
      let bytes = 0;
      for (const pair of pairs) for (const chunk of pair.pending) bytes += chunk.length;
      return bytes;
    },
    async close() {
      cut = true;
      for (const pair of [...pairs]) drop(pair);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
