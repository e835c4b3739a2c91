// The lines a run prints after its report: where to look at what it did (the Web UI and its filters, the
// inbox, the log table, the sandbox, the run's folder).
import path from 'node:path';
import type { RunOptions } from './runOptions';
import type { Stack } from './stack';

export function whereToLook(
  options: RunOptions,
  stack: Stack,
  taskQueue: string,
  runDirectory: string,
): string {
  const lines = ['', 'Where to look'];
  if (stack.temporal.uiUrl !== null) {
    const list = `${stack.temporal.uiUrl}/namespaces/${encodeURIComponent(stack.temporal.namespace)}/workflows`;
    const query = (text: string): string => `${list}?query=${encodeURIComponent(text)}`;
    lines.push(`  Temporal Web UI       ${stack.temporal.uiUrl}`);
    lines.push(`  this run's workflows  ${query(`TaskQueue="${taskQueue}"`)}`);
    lines.push(`  the failed ones       ${query(`TaskQueue="${taskQueue}" AND ExecutionStatus="Failed"`)}`);
  } else {
    lines.push(
      `  Temporal              ${stack.temporal.address} (namespace ${stack.temporal.namespace}, task queue ${taskQueue})`,
    );
  }
  if (stack.inbox !== null) lines.push(`  the mails (inbox)     ${stack.inbox.webUrl}`);
  lines.push(
    `  order_mail_log        psql "${options.keep ? stack.databaseUrl : '<DATABASE_URL>'}" -c "select state, outcome, count(*) from order_mail_log group by 1, 2"`,
  );
  lines.push(`  mail sandbox          ${stack.mail.messagesUrl ?? stack.mail.address}`);
  lines.push(`  logs and report.json  ${path.relative(process.cwd(), runDirectory) || runDirectory}`);
  if (!options.keep) {
    lines.push(
      '',
      `Everything stops now; run \`npm run ${options.profile} -- --keep\` to keep it up and click around.`,
    );
  }
  return lines.join('\n');
}
