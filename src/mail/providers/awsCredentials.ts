// AWS credentials for SES from three sources only, so a worker never signs with keys it was not meant to
// have: docs/providers.md, Amazon SES, "Credentials".
import { fromHttp, fromTokenFile } from '@aws-sdk/credential-providers';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

export type AwsCredentialSource =
  | { kind: 'static'; accessKeyId: string; secretAccessKey: string; sessionToken: string | null }
  | { kind: 'web-identity'; tokenFile: string; roleArn: string; sessionName: string | null }
  | {
      kind: 'container';
      fullUri: string | null;
      relativeUri: string | null;
      /** AWS_CONTAINER_AUTHORIZATION_TOKEN: a secret. */
      authorizationToken: string | null;
      authorizationTokenFile: string | null;
    };

export type AwsCredentialProvider = () => Promise<AwsCredentials>;

/** The source the environment names, or null with a problem appended when it names none (or half of one). */
export function readAwsCredentialSource(
  env: Record<string, string | undefined>,
  problems: string[],
): AwsCredentialSource | null {
  const read = (name: string): string | null => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  };
  const accessKeyId = read('AWS_ACCESS_KEY_ID');
  const secretAccessKey = read('AWS_SECRET_ACCESS_KEY');
  if (accessKeyId !== null || secretAccessKey !== null) {
    if (accessKeyId === null || secretAccessKey === null) {
      problems.push('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both or neither.');
      return null;
    }
    return { kind: 'static', accessKeyId, secretAccessKey, sessionToken: read('AWS_SESSION_TOKEN') };
  }
  const tokenFile = read('AWS_WEB_IDENTITY_TOKEN_FILE');
  const roleArn = read('AWS_ROLE_ARN');
  if (tokenFile !== null || roleArn !== null) {
    if (tokenFile === null || roleArn === null) {
      problems.push('AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN go together: set both or neither.');
      return null;
    }
    return { kind: 'web-identity', tokenFile, roleArn, sessionName: read('AWS_ROLE_SESSION_NAME') };
  }
  const fullUri = read('AWS_CONTAINER_CREDENTIALS_FULL_URI');
  const relativeUri = read('AWS_CONTAINER_CREDENTIALS_RELATIVE_URI');
  if (fullUri !== null || relativeUri !== null) {
    return {
      kind: 'container',
      fullUri,
      relativeUri,
      authorizationToken: read('AWS_CONTAINER_AUTHORIZATION_TOKEN'),
      authorizationTokenFile: read('AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE'),
    };
  }
  problems.push(
    'MAIL_PROVIDER=ses needs AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or ' +
      'AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, or AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI.',
  );
  return null;
}

/** What stays the same while temporary keys rotate; its fingerprint is the destination's credential. */
export function awsCredentialIdentity(source: AwsCredentialSource): string {
  switch (source.kind) {
    case 'static':
      return `aws-access-key:${source.accessKeyId}`;
    case 'web-identity':
      return `aws-role:${source.roleArn}`;
    case 'container':
      return `aws-container:${source.fullUri ?? source.relativeUri ?? ''}`;
  }
}

/** Temporary keys are fetched again this long before they expire, so a request is never signed with stale ones. */
const REFRESH_BEFORE_EXPIRY_MS = 5 * 60 * 1000;

/** Caches temporary keys until shortly before they expire; one fetch at a time. */
export function createAwsCredentialProvider(
  source: AwsCredentialSource,
  options: { region: string },
): AwsCredentialProvider {
  if (source.kind === 'static') {
    const credentials: AwsCredentials = {
      accessKeyId: source.accessKeyId,
      secretAccessKey: source.secretAccessKey,
      ...(source.sessionToken === null ? {} : { sessionToken: source.sessionToken }),
    };
    return async () => credentials;
  }
  const fetch: AwsCredentialProvider =
    source.kind === 'web-identity'
      ? fromTokenFile({
          webIdentityTokenFile: source.tokenFile,
          roleArn: source.roleArn,
          ...(source.sessionName === null ? {} : { roleSessionName: source.sessionName }),
          clientConfig: { region: options.region },
        })
      : fromHttp({
          ...(source.fullUri === null ? {} : { awsContainerCredentialsFullUri: source.fullUri }),
          ...(source.relativeUri === null ? {} : { awsContainerCredentialsRelativeUri: source.relativeUri }),
          ...(source.authorizationToken === null
            ? {}
            : { awsContainerAuthorizationToken: source.authorizationToken }),
          ...(source.authorizationTokenFile === null
            ? {}
            : { awsContainerAuthorizationTokenFile: source.authorizationTokenFile }),
        });
  let cached: AwsCredentials | null = null;
  let pending: Promise<AwsCredentials> | null = null;
  return async () => {
    if (
      cached !== null &&
      (cached.expiration === undefined || cached.expiration.getTime() - Date.now() > REFRESH_BEFORE_EXPIRY_MS)
    ) {
      return cached;
    }
    pending ??= fetch()
      .then((credentials) => {
        cached = credentials;
        return credentials;
      })
      .finally(() => {
        pending = null;
      });
    return pending;
  };
}
