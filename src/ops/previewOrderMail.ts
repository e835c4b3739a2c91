// `npm run ops -- preview <order>`: the mail as the worker would render it now, sent and recorded nowhere. It
// reads the order as the worker does, so it runs with the worker's environment (DATABASE_URL, MAIL_*).
import { CONFIG_DEFAULTS } from '../config/configDefaults';
import { ConfigError, EnvReader } from '../config/envReader';
import { loadOrderForMail } from '../db/orders';
import type { Database } from '../db/pool';
import { renderConfirmationMail, type MailIdentity } from '../mail/confirmationMail';
import { DEFAULT_TEMPLATE_DIR, loadMailTemplates, type MailTemplates } from '../mail/template/mailTemplates';
import { OpsRefusal } from './opsContext';

export interface PreviewSettings {
  databaseUrl: string;
  templateDir: string;
  identity: MailIdentity;
}

/** Pure, like loadConfig: every problem at once. */
export function loadPreviewSettings(env: Record<string, string | undefined>): PreviewSettings {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);
  const databaseUrl = read.optional('DATABASE_URL');
  if (databaseUrl === null) {
    problems.push("preview needs DATABASE_URL, the workers' login: it reads the order as the worker does.");
  }
  const identity: MailIdentity = {
    from: read.mailbox('MAIL_FROM') ?? CONFIG_DEFAULTS.MAIL_FROM,
    replyTo: read.mailbox('MAIL_REPLY_TO'),
    subject: read.headerText('MAIL_SUBJECT') ?? CONFIG_DEFAULTS.MAIL_SUBJECT,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    databaseUrl: databaseUrl!,
    templateDir: read.optional('MAIL_TEMPLATE_DIR') ?? DEFAULT_TEMPLATE_DIR,
    identity,
  };
}

export interface OrderMailPreview {
  orderId: string;
  template: { name: string; sha256: string; dir: string };
  from: string;
  to: string;
  replyTo: string | null;
  subject: string;
  text: string;
  html: string;
}

export async function previewOrderMail(
  db: Database,
  orderId: string,
  identity: MailIdentity,
  templates: MailTemplates = loadMailTemplates(DEFAULT_TEMPLATE_DIR),
): Promise<OrderMailPreview> {
  const order = await loadOrderForMail(db, orderId);
  if (order === null) throw new OpsRefusal('UNKNOWN_ORDER', `There is no order ${orderId}.`);
  const mail = renderConfirmationMail(order, identity, templates);
  return {
    orderId,
    template: { name: templates.name, sha256: templates.sha256, dir: templates.dir },
    from: mail.from,
    to: mail.to,
    replyTo: mail.replyTo,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
  };
}

export function formatPreview(preview: OrderMailPreview): string {
  return [
    `Preview of the mail of order ${preview.orderId} (not sent, not recorded)`,
    `Template: ${preview.template.name} sha256:${preview.template.sha256} (${preview.template.dir})`,
    `From:     ${preview.from}`,
    `To:       ${preview.to}`,
    `Reply-To: ${preview.replyTo ?? '(none)'}`,
    `Subject:  ${preview.subject}`,
    '',
    '----- text -----',
    preview.text,
    '----- html -----',
    preview.html,
  ].join('\n');
}
