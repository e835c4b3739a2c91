// Whether this checkout's node_modules can run an older release's worker: every package its lockfile needs
// at run time, installed here in the same version. Pure, so a test holds the rule without a registry.

/** The fields of a package-lock.json (v2/v3) `packages` entry this looks at. */
export interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  link?: boolean;
}

/**
 * The run-time packages of `lock` that are missing here or installed in another version, as
 * `path (wanted, installed)`. Dev-only packages are left out: the tools that run the worker (tsx) are this
 * checkout's. An optional package (a platform's binary) may be absent, but not present in another version.
 */
export function unservedPackages(
  lock: { packages?: Record<string, LockEntry> },
  installedVersion: (lockPath: string) => string | null,
): string[] {
  const unserved: string[] = [];
  for (const [lockPath, entry] of Object.entries(lock.packages ?? {})) {
    if (!lockPath.startsWith('node_modules/') || entry.link === true || entry.dev === true) continue;
    const installed = installedVersion(lockPath);
    if (installed === entry.version) continue;
    if (installed === null && (entry.optional === true || entry.devOptional === true)) continue;
    unserved.push(`${lockPath} (${entry.version ?? '?'}, installed ${installed ?? 'none'})`);
  }
  return unserved;
}
