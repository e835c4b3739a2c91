// Determinism guard: the current workflow code must replay the stored histories of earlier runs. A change
// that would break workflows already running in production fails here with a DeterminismViolationError.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { REPLAY_HISTORIES_DIRECTORY } from '../support/replayHistories';

// The paths whose histories must be kept: a change that drops one of them should be a conscious one.
const REQUIRED = [
  'accepted',
  'rejected-422',
  'unknown-assume-sent',
  'unknown-assume-failed-then-accepted',
  'retry-after-429',
  'unknown-idempotent-retry-then-accepted',
  // Resets (test/ops/resetSemantics.test.ts), with the search-attribute upserts behind their patch marker.
  'reset-after-rejected-then-accepted',
  'reset-of-sent',
];

describe('replay of stored histories', async () => {
  const files = (await readdir(REPLAY_HISTORIES_DIRECTORY)).filter((name) => name.endsWith('.json')).sort();

  it('holds a history for every required path', () => {
    expect(files.map((name) => name.replace(/\.json$/, ''))).toEqual(expect.arrayContaining(REQUIRED));
  });

  for (const file of files) {
    it(`replays ${file}`, async () => {
      const stored = JSON.parse(await readFile(path.join(REPLAY_HISTORIES_DIRECTORY, file), 'utf8')) as {
        workflowId: string;
        history: unknown;
      };
      await Worker.runReplayHistory(
        { workflowBundle: { codePath: inject('workflowBundlePath') } },
        stored.history,
        stored.workflowId,
      );
    });
  }
});
