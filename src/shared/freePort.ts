import { createServer } from 'node:net';

/** Port 0's pick; racy in theory, but a fixed port collides far more often on a shared machine. */
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
