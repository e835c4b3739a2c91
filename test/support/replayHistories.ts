import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { findTemporalCli } from '../../dev/devtools/findTemporalCli';

export const REPLAY_HISTORIES_DIRECTORY = path.join(__dirname, '..', 'replay', 'histories');

/**
 * With UPDATE_REPLAY_HISTORIES=1 (`npm run test:record-histories`), stores the workflow's history under
 * test/replay/histories/<name>.json. The replay test then checks that every later change to the workflow
 * code still replays the histories of runs made by earlier code. The CLI's `workflow show --output json` is
 * the canonical JSON form that the SDK's replayer reads.
 */
export function saveHistoryIfRequested(workflowId: string, name: string): void {
  if (process.env.UPDATE_REPLAY_HISTORIES !== '1') return;
  const cli = findTemporalCli();
  if (cli === null) throw new Error('UPDATE_REPLAY_HISTORIES needs the temporal CLI; run scripts/setup.sh');
  const json = execFileSync(
    cli,
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      '--output',
      'json',
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
    ],
    { encoding: 'utf8' },
  );
  mkdirSync(REPLAY_HISTORIES_DIRECTORY, { recursive: true });
  const history = JSON.parse(json) as unknown;
  writeFileSync(
    path.join(REPLAY_HISTORIES_DIRECTORY, `${name}.json`),
    JSON.stringify({ workflowId, history }, null, 2) + '\n',
  );
}
