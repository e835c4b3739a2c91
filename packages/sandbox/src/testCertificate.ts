// A self-signed X.509 certificate made at run time, for the sandbox's SNS signatures: SNS signs every message
// with the key of a certificate it serves from its own host, and the receiver verifies with that certificate.
// The sandbox plays SNS with a throwaway RSA key and this certificate; the receiver trusts where it is served
// only when a test tells it to (src/webhooks/snsWebhook.ts, trustTestCertificateOrigin). Node can read
// certificates but not make them, so the few DER structures needed are written here by hand (RFC 5280).
import { createSign, generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';

export interface TestCertificate {
  /** PEM, as SNS serves its signing certificate. */
  pem: string;
  privateKey: KeyObject;
}

export function makeTestCertificate(commonName: string, validForMs = 24 * 3_600_000): TestCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const sha256WithRsa = sequence(oid('1.2.840.113549.1.1.11'), tlv(0x05, Buffer.alloc(0)));
  const name = sequence(set(sequence(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
  const now = Date.now();
  const tbs = sequence(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(Buffer.from([0x01, ...Array.from({ length: 7 }, () => Math.floor(Math.random() * 256))])),
    sha256WithRsa,
    name,
    sequence(utcTime(new Date(now - 3_600_000)), utcTime(new Date(now + validForMs))),
    name,
    publicKey.export({ format: 'der', type: 'spki' }),
  );
  const signature = createSign('sha256').update(tbs).sign(privateKey);
  const der = sequence(tbs, sha256WithRsa, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const pem = `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  // Parsed once here, so a mistake in the encoding shows at once rather than as a signature that never verifies.
  new X509Certificate(pem);
  return { pem, privateKey };
}

function tlv(tag: number, content: Buffer): Buffer {
  const length = content.length;
  const head =
    length < 0x80
      ? Buffer.from([tag, length])
      : length < 0x100
        ? Buffer.from([tag, 0x81, length])
        : Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  return Buffer.concat([head, content]);
}

function sequence(...parts: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(parts));
}

function set(...parts: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(parts));
}

function integer(bytes: Buffer): Buffer {
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [first! * 40 + second!];
  for (const value of rest) {
    const chunk: number[] = [];
    let remaining = value;
    do {
      chunk.unshift(remaining & 0x7f);
      remaining >>= 7;
    } while (remaining > 0);
    for (let index = 0; index < chunk.length - 1; index += 1) chunk[index]! |= 0x80;
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const text = date.toISOString().replace(/[-:T]/g, '').slice(2, 14);
  return tlv(0x17, Buffer.from(`${text}Z`, 'ascii'));
}
