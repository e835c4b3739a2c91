import { describe, expect, it } from 'vitest';
import { unservedPackages } from '../../dev/bench/release/servedPackages';

describe('unservedPackages: whether this checkout can run an older release', () => {
  const installed =
    (versions: Record<string, string>) =>
    (lockPath: string): string | null =>
      versions[lockPath] ?? null;

  it('is empty when every run-time package is installed in the same version', () => {
    const lock = {
      packages: {
        '': { version: '2.0.0' },
        'node_modules/pg': { version: '8.23.1' },
        'node_modules/a/node_modules/b': { version: '1.0.0' },
      },
    };
    expect(
      unservedPackages(
        lock,
        installed({ 'node_modules/pg': '8.23.1', 'node_modules/a/node_modules/b': '1.0.0' }),
      ),
    ).toEqual([]);
  });

  it('names a run-time package that is missing or installed in another version', () => {
    const lock = {
      packages: {
        'node_modules/pg': { version: '8.23.1' },
        'node_modules/@opentelemetry/exporter-zipkin': { version: '1.30.1' },
      },
    };
    expect(unservedPackages(lock, installed({ 'node_modules/pg': '8.24.0' }))).toEqual([
      'node_modules/pg (8.23.1, installed 8.24.0)',
      'node_modules/@opentelemetry/exporter-zipkin (1.30.1, installed none)',
    ]);
  });

  it('leaves out dev packages, workspace links and absent optional ones, but not a wrong optional version', () => {
    const lock = {
      packages: {
        'node_modules/vitest': { version: '5.1.2', dev: true },
        'node_modules/@order-confirmation-mail/client': { link: true },
        'packages/client': { version: '2.0.0' },
        'node_modules/@esbuild/darwin-arm64': { version: '0.28.2', optional: true },
        'node_modules/fsevents': { version: '2.3.3', devOptional: true },
        'node_modules/@esbuild/linux-x64': { version: '0.28.2', optional: true },
      },
    };
    expect(unservedPackages(lock, installed({ 'node_modules/@esbuild/linux-x64': '0.27.0' }))).toEqual([
      'node_modules/@esbuild/linux-x64 (0.28.2, installed 0.27.0)',
    ]);
  });
});
