// How the worker, the client and the CLIs find Temporal: envconfig's variables and TOML profiles, with the
// project's defaults, read into connection options. No server needed; files are real temp files.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/loadConfig';
import {
  loadTemporalConnectionConfig,
  TemporalConnectionConfigError,
} from '../../src/config/temporalConnection';

let directory: string;
let configFile: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'temporal-connection-'));
  await writeFile(path.join(directory, 'client.pem'), 'client certificate');
  await writeFile(path.join(directory, 'client.key'), 'client key');
  await writeFile(path.join(directory, 'ca.pem'), 'server CA');
  configFile = path.join(directory, 'temporal.toml');
  await writeFile(
    configFile,
    [
      '[profile.default]',
      'address = "default-profile:7233"',
      '',
      '[profile.production]',
      'address = "temporal.internal:7233"',
      'namespace = "orders"',
      '[profile.production.tls]',
      `client_cert_path = "${path.join(directory, 'client.pem')}"`,
      `client_key_path = "${path.join(directory, 'client.key')}"`,
      `server_ca_cert_path = "${path.join(directory, 'ca.pem')}"`,
      'server_name = "temporal.internal"',
      '',
    ].join('\n'),
  );
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

// No HOME: the developer's own ~/.config/temporalio/temporal.toml must not leak into these cases.
const isolated = (env: Record<string, string>) => ({
  TEMPORAL_CONFIG_FILE: path.join(directory, 'none.toml'),
  ...env,
});

describe('the Temporal connection settings', () => {
  it('default to localhost:7233 and namespace default, in plaintext', () => {
    const config = loadTemporalConnectionConfig(isolated({}));
    expect(config.connectionOptions).toEqual({ address: 'localhost:7233' });
    expect(config.namespace).toBe('default');
    expect(config.description).toBe('localhost:7233 (namespace default, plaintext)');
  });

  it('take TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, and treat an empty variable as unset', () => {
    const config = loadTemporalConnectionConfig(
      isolated({ TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: '', TEMPORAL_API_KEY: '' }),
    );
    expect(config.connectionOptions).toEqual({ address: 'temporal:7233' });
    expect(config.namespace).toBe('default');
  });

  it('turn TLS on with an API key, as Temporal Cloud needs', () => {
    const config = loadTemporalConnectionConfig(
      isolated({
        TEMPORAL_ADDRESS: 'x.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'x.acct',
        TEMPORAL_API_KEY: 'key',
      }),
    );
    expect(config.connectionOptions).toMatchObject({ apiKey: 'key', tls: true });
    expect(config.description).toBe('x.tmprl.cloud:7233 (namespace x.acct, TLS, API key)');
  });

  it('read mTLS files from the TEMPORAL_TLS_* variables', () => {
    const config = loadTemporalConnectionConfig(
      isolated({
        TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(directory, 'client.pem'),
        TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(directory, 'client.key'),
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: path.join(directory, 'ca.pem'),
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      }),
    );
    const tls = config.connectionOptions.tls;
    if (typeof tls !== 'object') throw new Error('expected a TLS config');
    expect(tls.serverNameOverride).toBe('localhost');
    const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('utf8');
    expect(text(tls.serverRootCACertificate)).toBe('server CA');
    expect(text(tls.clientCertPair?.crt)).toBe('client certificate');
    expect(text(tls.clientCertPair?.key)).toBe('client key');
    expect(config.description).toContain('mTLS');
  });

  it('use a TOML profile, with the variables winning over it', () => {
    const config = loadTemporalConnectionConfig({
      TEMPORAL_CONFIG_FILE: configFile,
      TEMPORAL_PROFILE: 'production',
      TEMPORAL_NAMESPACE: 'orders-staging',
    });
    expect(config.connectionOptions.address).toBe('temporal.internal:7233');
    expect(config.namespace).toBe('orders-staging');
    expect(config.description).toBe('temporal.internal:7233 (namespace orders-staging, mTLS)');
    // Without TEMPORAL_PROFILE the file's default profile applies.
    expect(loadTemporalConnectionConfig({ TEMPORAL_CONFIG_FILE: configFile }).connectionOptions.address).toBe(
      'default-profile:7233',
    );
  });

  it('report a missing profile or an unreadable certificate, also among the worker config problems', () => {
    expect(() =>
      loadTemporalConnectionConfig({ TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'nope' }),
    ).toThrow(TemporalConnectionConfigError);
    const env = isolated({
      DATABASE_URL: 'postgres://u:p@localhost/shop',
      MAIL_DEPLOYMENT_ID: 'test-deployment',
      MAIL_API_BASE_URL: 'http://127.0.0.1:4010',
      MAIL_API_KEY: 'k',
      TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(directory, 'missing.pem'),
      TEMPORAL_TLS_CLIENT_KEY_PATH: path.join(directory, 'client.key'),
    });
    expect(() => loadConfig(env)).toThrow(ConfigError);
    try {
      loadConfig(env);
    } catch (error) {
      expect((error as ConfigError).problems.join('\n')).toContain('missing.pem');
    }
  });
});
