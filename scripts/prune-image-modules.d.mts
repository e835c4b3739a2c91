// Types of scripts/prune-image-modules.mjs for its test (test/deploy/imagePrune.test.ts).
export const BUNDLER_ONLY: readonly string[];
export function pruneImageModules(
  appDirectory: string,
  arch: string,
): { before: number; after: number; removedPackages: number };
