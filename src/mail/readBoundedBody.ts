// A huge body must not hold a worker's memory, and an unread one would keep its socket from the pool.
import type { Dispatcher } from 'undici';

/** The whole body as text, or null (and the socket released) when it is longer than `limit` bytes. */
export async function readBoundedBody(
  body: Dispatcher.ResponseData['body'],
  limit: number,
): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
