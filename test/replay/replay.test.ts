// Determinism guard: the current workflow code must replay the stored histories, which are recorded from
// today's code on every path (recordedPaths.test.ts checks they still are). A change that would break
// workflows already running fails here with a DeterminismViolationError. Each history replays on the bundle
// with the OpenTelemetry workflow interceptors (a prebuilt bundle, or a worker with tracing on) and on one
// without them (a worker with tracing off: the prebuilt twin, or the same bundle made at start-up), so a
// workflow can move between the two.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { prebuiltBundleToRun } from '../../src/workerOptions';
import { RECORDED_PATHS, REPLAY_HISTORIES_DIRECTORY } from './histories';
import { startReplaySession, type ReplaySession } from './replaySession';

describe('replay of stored histories', async () => {
  const files = (await readdir(REPLAY_HISTORIES_DIRECTORY)).filter((name) => name.endsWith('.json')).sort();

  it('holds exactly one history per recorded path: none missing, none left from paths that are gone', () => {
    // Sorted after the suffix is gone: 'a-b.json' sorts before 'a.json', but 'a' before 'a-b'.
    expect(files.map((name) => name.replace(/\.json$/, '')).sort()).toEqual([...RECORDED_PATHS].sort());
  });

  // What a worker with tracing off runs (prebuiltBundleToRun): the run's twin without the interceptors, made
  // by the same bundleWorkflowCode call a worker makes at start-up with tracing off, not webpacked again here.
  let withoutInterceptors: Promise<string> | null = null;
  const bundleWithoutInterceptors = (): Promise<string> =>
    (withoutInterceptors ??= readFile(
      prebuiltBundleToRun(inject('workflowBundlePath'), false).workflowBundle.codePath,
      'utf8',
    ));

  // One replay worker per bundle for the file, each test's history replayed on it (replaySession.ts).
  let untraced: ReplaySession | null = null;
  let prebuilt: ReplaySession | null = null;
  afterAll(async () => {
    await untraced?.close();
    await prebuilt?.close();
  });

  const read = async (file: string) =>
    JSON.parse(await readFile(path.join(REPLAY_HISTORIES_DIRECTORY, file), 'utf8')) as {
      workflowId: string;
      history: unknown;
    };

  for (const file of files) {
    it(`replays ${file} on a bundle without the tracing interceptors`, async () => {
      const stored = await read(file);
      const code = await bundleWithoutInterceptors();
      expect(code).not.toContain('src/tracing/workflowInterceptors');
      untraced ??= startReplaySession({ workflowBundle: { code } });
      await untraced.replay(stored.history, stored.workflowId);
    }, 120_000);

    it(`replays ${file}`, async () => {
      const stored = await read(file);
      prebuilt ??= startReplaySession({ workflowBundle: { codePath: inject('workflowBundlePath') } });
      await prebuilt.replay(stored.history, stored.workflowId);
    });
  }
});
