import { createServer, type Server } from 'node:net';

/**
 * `count` distinct free TCP ports: all are held open together before any is released, so the kernel cannot
 * hand out one twice (as separate getFreePort calls could). Another process may still take one before the
 * caller binds it; that window is tiny.
 *
 * With `below`, the ports are drawn at random under that number instead of from the kernel's ephemeral
 * range (32768 and up on Linux): the Temporal server stores its ports in a Postgres smallint column
 * (cluster_membership.rpc_port), and a port above 32767 makes it exit at start-up.
 */
export async function getFreePorts(
  count: number,
  host = '127.0.0.1',
  options: { below?: number } = {},
): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    let tries = 0;
    while (ports.length < count) {
      if (++tries > count * 50) throw new Error(`could not find ${count} free ports on ${host}`);
      const wanted = options.below === undefined ? 0 : randomPortBelow(options.below);
      const server = createServer();
      const port = await listen(server, host, wanted).catch(() => null);
      if (port === null || ports.includes(port)) {
        await close(server);
        continue;
      }
      servers.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map(close));
  }
}

// Well above the registered services most machines run (5432, 8080, ...), below the ephemeral range.
const LOWEST_RANDOM_PORT = 20_000;

function randomPortBelow(limit: number): number {
  return LOWEST_RANDOM_PORT + Math.floor(Math.random() * (limit - LOWEST_RANDOM_PORT));
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else reject(new Error(`could not read the port of a listener on ${host}`));
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) resolve();
    else server.close(() => resolve());
  });
}
