// MAIL_PROVIDER=ses by configuration: the region's endpoint, the configuration set, the three AWS credential
// sources, verification by SNS events, and every problem at once without a secret in it.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { problemsOf } from '../support/configProblems';

const BASE = {
  DATABASE_URL: 'postgres://u:p@localhost:5432/shop',
  MAIL_PROVIDER: 'ses',
  MAIL_DEPLOYMENT_ID: 'test-deployment',
};

describe('MAIL_PROVIDER=ses', () => {
  it('static keys: the region endpoint, the configuration set, no MAIL_API_KEY, verified by SNS events', () => {
    const config = loadConfig({
      ...BASE,
      AWS_REGION: 'eu-west-1',
      SES_CONFIGURATION_SET: 'order-mail-events',
      SES_ACCOUNT_ID: '111122223333',
      AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret-example',
    });
    expect(config.mailApi).toMatchObject({
      provider: 'ses',
      baseUrl: 'https://email.eu-west-1.amazonaws.com',
      ses: {
        region: 'eu-west-1',
        configurationSet: 'order-mail-events',
        accountId: '111122223333',
        credentials: { kind: 'static' },
      },
    });
    expect(config.verification?.facts).toMatchObject({ lookup: false, webhook: 'ses' });
    expect(config.workflow.idempotency).toBeNull();
  });

  it('web identity and container credentials are read from AWS’s usual variables', () => {
    const common = {
      ...BASE,
      AWS_DEFAULT_REGION: 'us-west-2',
      SES_CONFIGURATION_SET: 'events',
      SES_ACCOUNT_ID: '111122223333',
    };
    expect(
      loadConfig({
        ...common,
        AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/token',
        AWS_ROLE_ARN: 'arn:aws:iam::1:role/mail',
      }).mailApi.ses?.credentials,
    ).toEqual({
      kind: 'web-identity',
      tokenFile: '/var/run/token',
      roleArn: 'arn:aws:iam::1:role/mail',
      sessionName: null,
    });
    expect(
      loadConfig({ ...common, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: '/v2/credentials/abc' }).mailApi.ses
        ?.credentials,
    ).toMatchObject({ kind: 'container', relativeUri: '/v2/credentials/abc', fullUri: null });
  });

  it('reports every missing piece at once, and never a secret', () => {
    const problems = problemsOf({ ...BASE, AWS_SECRET_ACCESS_KEY: 'secret-example', AWS_REGION: 'Europe' });
    expect(problems).toEqual([
      'AWS_REGION must be an AWS region such as eu-west-1 (got "Europe").',
      'SES_CONFIGURATION_SET is required.',
      'SES_ACCOUNT_ID is required.',
      'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both or neither.',
    ]);
    expect(JSON.stringify(problems)).not.toContain('secret-example');
  });

  it('SES_ACCOUNT_ID must be a 12-digit account id: the account every SES event of ours must name', () => {
    expect(
      problemsOf({
        ...BASE,
        AWS_REGION: 'eu-west-1',
        SES_CONFIGURATION_SET: 'events',
        SES_ACCOUNT_ID: 'arn:aws:iam::111122223333:root',
        AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'secret-example',
      }),
    ).toEqual([
      'SES_ACCOUNT_ID must be the 12-digit AWS account id SES sends from (got "arn:aws:iam::111122223333:root").',
    ]);
  });
});
