/**
 * The answer without an LLM (spec "Ask behaviour" 8): a structured bullet list built from the
 * same counts and events the prompt would have carried, so an administrator still learns what
 * matched, what failed and what happened last.
 */
import type { AskEvent, Counts, CountsCover } from './gather.js';
import type { QueryInfo } from './merge.js';
import { countsScope } from './prompt.js';

const line = (e: AskEvent) =>
  `${new Date(e.ts).toISOString()} — ${e.actor || 'unknown actor'}: ${e.operation} (${e.service}, ${e.result})${e.target ? ` on ${e.target}` : ''} [#${e.id}]`;

const list = (entries: Array<[string, number]>, n: number) =>
  entries
    .slice(0, n)
    .map(([k, v]) => `${k || '(none)'} ${v}`)
    .join(', ');

export const FALLBACK_FAILURES = 10;
export const FALLBACK_RECENT = 5;

export function fallbackAnswer(input: {
  info: QueryInfo;
  total: number;
  totalCapped: boolean;
  counts: Counts;
  /** What the counts cover (absent: every matched event). */
  countsCover?: CountsCover;
  sample: readonly AskEvent[];
  reason: string;
}): { answer: string; events: AskEvent[] } {
  const { total, counts } = input;
  const t = input.info.time_range;
  const window = `${t.start ?? 'the first stored event'} to ${t.end ?? 'now'}`;
  const lines = [`- ${input.totalCapped ? `More than ${total}` : total} events matched (${window}, UTC).`];
  if (input.info.excluded_services) {
    lines.push(`- Left out: ${input.info.excluded_services.services.join(', ')} (a broad question).`);
  }
  if (total === 0) {
    lines.push(`- Nothing to summarise. (No language model was used: ${input.reason}.)`);
    return { answer: lines.join('\n'), events: [] };
  }
  if (input.countsCover && !input.countsCover.allMatched) {
    const matched = input.totalCapped ? `more than ${total}` : String(total);
    lines.push(`- The counts below cover ${countsScope(matched, input.countsCover)}.`);
  }
  lines.push(`- By service: ${list(counts.service, 10)}.`);
  lines.push(`- By result: ${list(counts.result, 5)}.`);
  lines.push(`- Top operations: ${list(counts.operation, 5)}.`);
  lines.push(`- Top actors: ${list(counts.actor, 5)}.`);
  const failures = input.sample.filter((e) => e.result === 'failure').slice(0, FALLBACK_FAILURES);
  if (failures.length) {
    lines.push(`- Failures (newest ${failures.length}):`);
    for (const e of failures) lines.push(`  - ${line(e)}`);
  }
  const recent = input.sample.filter((e) => !failures.includes(e)).slice(0, FALLBACK_RECENT);
  if (recent.length) {
    lines.push('- Most recent:');
    for (const e of recent) lines.push(`  - ${line(e)}`);
  }
  lines.push(`- No language model was used: ${input.reason}.`);
  return { answer: lines.join('\n'), events: [...failures, ...recent] };
}
