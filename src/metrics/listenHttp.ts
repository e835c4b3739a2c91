// Shared by the worker's and the webhook receiver's endpoints.
import type { Server } from 'node:http';

export interface ListeningHttpServer {
  /** http://host:port as bound (port 0 becomes the port the system chose). */
  url: string;
  /** Stops listening and drops open connections (a scraper's keep-alive must not hold shutdown). */
  close(): Promise<void>;
}

export async function listenHttp(server: Server, host: string, port: number): Promise<ListeningHttpServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const boundPort = address !== null && typeof address === 'object' ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
