/**
 * The one line a test run ends with when tests were skipped for something missing on this
 * machine (tests/helpers/skips.ts records them; tests/global-setup.ts prints the line). No vitest
 * import here: the global setup runs in vitest's main process.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface SkipRecord {
  /** What is missing, as the end-of-run line names it: `PostgreSQL`, `Redis`, `root`. */
  need: string;
  /** Why, in one line, with no secret in it. */
  why: string;
  /** The test file, relative to the checkout. */
  file: string;
}

/** The one end-of-run line for the records (undefined when nothing was skipped). */
export function skipSummary(records: readonly SkipRecord[]): string | undefined {
  if (records.length === 0) return undefined;
  const byNeed = new Map<string, { files: Set<string>; whys: Set<string> }>();
  for (const r of records) {
    const entry = byNeed.get(r.need) ?? { files: new Set(), whys: new Set() };
    entry.files.add(r.file);
    entry.whys.add(r.why);
    byNeed.set(r.need, entry);
  }
  const parts = [...byNeed].map(
    ([need, { files, whys }]) =>
      `that need ${need} in ${files.size} ${files.size === 1 ? 'file' : 'files'} (${[...whys].join('; ')})`,
  );
  return `skipped tests ${parts.join(', ')}; under CI=true these fail instead; see README "Tests"`;
}

/** The records in a skip log (JSON lines); none when the file is missing. */
export function readSkipLog(path: string): SkipRecord[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SkipRecord);
}
