// Where the console's built files are: `pnpm install` builds them (the root postinstall runs this
// package's `build`), and the api serves that folder at /console.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const CONSOLE_DIST = join(import.meta.dirname, '..', 'dist');

/** True once the console has been built (dist/index.html exists). */
export function consoleBuilt(dir: string = CONSOLE_DIST): boolean {
  return existsSync(join(dir, 'index.html'));
}
