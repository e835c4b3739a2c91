// Scratch folders for the tests that install or build many files (npm ci, npm install, pip install, tsc's
// output): on a memory file system when the machine has one with room, where creating the tens of thousands
// of files costs a fraction of the kernel CPU it costs on a journaled disk (the production install: about 4.5
// of its 12 CPU s). What lands there is the same; where it lands is not what these tests try.
import { readFileSync, statfsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const MEMORY_FILE_SYSTEM = '/dev/shm';
// The production install is ~315 MB and the client packages' consumers ~350 MB, side by side.
const ROOM_NEEDED_BYTES = 2 * 1024 ** 3;

/** /dev/shm when it is a tmpfs that may run programs and has room; else the temporary folder. */
export function scratchRoot(): string {
  try {
    // A tmpfs that may run what is installed there (the SDKs' native modules): Docker mounts its small one
    // noexec.
    const usable = readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' '))
      .some(
        ([, mountPoint, type, options = '']) =>
          mountPoint === MEMORY_FILE_SYSTEM && type === 'tmpfs' && !options.split(',').includes('noexec'),
      );
    const room = statfsSync(MEMORY_FILE_SYSTEM);
    if (usable && room.bavail * room.bsize >= ROOM_NEEDED_BYTES) return MEMORY_FILE_SYSTEM;
  } catch {
    // No /proc or no such folder (macOS): the temporary folder.
  }
  return tmpdir();
}

/** A new folder named `prefix`-something for the caller to remove. */
export function scratchDirectory(prefix: string): Promise<string> {
  return mkdtemp(path.join(scratchRoot(), prefix));
}
