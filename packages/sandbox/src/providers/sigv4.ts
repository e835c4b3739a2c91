// AWS Signature Version 4, checked the way AWS checks it, written here from the specification rather than
// taken from the SDK the adapter signs with, so a test passing means two implementations agree. Only what an
// SES v2 request needs: the Authorization header form, a JSON body, no query string to speak of.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface SigV4Request {
  method: string;
  /** Path and query as the request line has them. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface SigV4Keys {
  accessKeyId: string;
  secretAccessKey: string;
  /** The region and service the signature must be scoped to. */
  region: string;
  service: string;
}

/** How far the request's X-Amz-Date may be from our clock (AWS: 5 minutes). */
export const SIGV4_MAX_SKEW_MS = 5 * 60 * 1000;

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/([0-9]{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** Null when the request is signed with these keys, now; else AWS's error name and a message. */
export function checkSigV4(
  request: SigV4Request,
  keys: SigV4Keys,
  now: Date,
): { code: string; message: string; status: number } | null {
  const authorization = single(request.headers.authorization);
  const match = authorization === null ? null : AUTHORIZATION.exec(authorization);
  if (match === null) {
    return {
      status: 403,
      code: 'IncompleteSignature',
      message: 'Authorization header is missing or malformed',
    };
  }
  const [, accessKeyId, date, region, service, signedHeaderList, signature] = match;
  if (accessKeyId !== keys.accessKeyId) {
    return {
      status: 403,
      code: 'UnrecognizedClient',
      message: `The security token included in the request is invalid: ${accessKeyId}`,
    };
  }
  if (region !== keys.region || service !== keys.service) {
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message: `Credential should be scoped to ${keys.region}/${keys.service}`,
    };
  }
  const amzDate = single(request.headers['x-amz-date']);
  if (amzDate === null || !/^[0-9]{8}T[0-9]{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== date) {
    return {
      status: 403,
      code: 'IncompleteSignature',
      message: 'X-Amz-Date is missing or does not match the scope',
    };
  }
  const signedAt = Date.parse(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  // AWS's own wording, which is all that tells this refusal from a wrong key: the name is the same.
  if (now.getTime() - signedAt > SIGV4_MAX_SKEW_MS) {
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message: `Signature expired: ${amzDate} is now earlier than ${amzDateOf(now.getTime() - SIGV4_MAX_SKEW_MS)} (${amzDateOf(now.getTime())} - 5 min.)`,
    };
  }
  if (signedAt - now.getTime() > SIGV4_MAX_SKEW_MS) {
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message: `Signature not yet current: ${amzDate} is still later than ${amzDateOf(now.getTime() + SIGV4_MAX_SKEW_MS)} (${amzDateOf(now.getTime())} + 5 min.)`,
    };
  }
  const signedHeaders = signedHeaderList!.split(';');
  if (!signedHeaders.includes('host') || !signedHeaders.includes('x-amz-date')) {
    return { status: 403, code: 'SignatureDoesNotMatch', message: 'host and x-amz-date must be signed' };
  }
  const [path, query = ''] = request.url.split('?');
  const canonicalHeaders = signedHeaders
    .map((name) => `${name}:${(single(request.headers[name]) ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const payloadHash = createHash('sha256').update(request.body, 'utf8').digest('hex');
  const canonicalRequest = [
    request.method,
    path,
    canonicalQuery(query),
    canonicalHeaders,
    signedHeaderList,
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest, 'utf8').digest('hex'),
  ].join('\n');
  let key: Buffer = hmac(`AWS4${keys.secretAccessKey}`, date);
  for (const part of [region, service, 'aws4_request']) key = hmac(key, part);
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest();
  if (!timingSafeEqual(expected, Buffer.from(signature!, 'hex'))) {
    return {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message: 'The request signature we calculated does not match the signature you provided.',
    };
  }
  return null;
}

function amzDateOf(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.[0-9]{3}/, '');
}

function hmac(key: string | Buffer, text: string): Buffer {
  return createHmac('sha256', key).update(text, 'utf8').digest();
}

function canonicalQuery(query: string): string {
  if (query === '') return '';
  return query
    .split('&')
    .map((pair) => pair.split('='))
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0))
    .map(([name, value = '']) => `${name}=${value}`)
    .join('&');
}

function single(value: string | string[] | undefined): string | null {
  return typeof value === 'string' ? value : null;
}
