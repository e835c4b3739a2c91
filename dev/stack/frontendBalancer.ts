// The cluster's one address for clients: a TCP balancer in front of the frontends, as a load balancer (or a
// Kubernetes Service) is in front of them in production. Each new connection goes to the next frontend in
// turn; one that refuses the connection is skipped, so while a frontend restarts, the clients whose connection
// it dropped reconnect through here to the other one. gRPC runs over long-lived HTTP/2 connections, so a
// connection stays on the frontend it was given until that frontend closes it.
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface FrontendBalancer {
  address: string;
  /** Connections handed to each frontend so far, by address. */
  connections(): Record<string, number>;
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 2_000;

export async function startFrontendBalancer(options: {
  ip: string;
  port: number;
  frontends: string[];
}): Promise<FrontendBalancer> {
  const sockets = new Set<Socket>();
  const handed: Record<string, number> = Object.fromEntries(options.frontends.map((address) => [address, 0]));
  let next = 0;

  const connectTo = (address: string): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const [host = options.ip, port = '0'] = address.split(':');
      const upstream = connect({ host, port: Number(port) });
      const timer = setTimeout(() => upstream.destroy(new Error('connect timeout')), CONNECT_TIMEOUT_MS);
      upstream.once('connect', () => {
        clearTimeout(timer);
        resolve(upstream);
      });
      upstream.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
    });

  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    void (async () => {
      // Each frontend once, starting with the next in turn.
      const start = next++;
      for (let offset = 0; offset < options.frontends.length; offset++) {
        const address = options.frontends[(start + offset) % options.frontends.length]!;
        let upstream: Socket;
        try {
          upstream = await connectTo(address);
        } catch {
          continue;
        }
        if (client.destroyed) {
          upstream.destroy();
          return;
        }
        handed[address] = (handed[address] ?? 0) + 1;
        sockets.add(upstream);
        upstream.once('close', () => {
          sockets.delete(upstream);
          client.destroy();
        });
        upstream.on('error', () => upstream.destroy());
        client.once('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        return;
      }
      // No frontend answers: the client sees its connection closed and retries.
      client.destroy();
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.ip, () => resolve());
  });
  return {
    address: `${options.ip}:${options.port}`,
    connections: () => ({ ...handed }),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
