import { createServer } from 'node:net';

/**
 * Asks the kernel for a free TCP port by listening on port 0 and closing again. Another process could take
 * the port before the caller binds it; that window is tiny, and a fixed port collides far more often when
 * several test runs or developers share a machine.
 */
export async function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error(`could not read the port of a listener on ${host}`));
      });
    });
  });
}
