/** Readable log lines on a terminal, JSON elsewhere (LOG_FORMAT), with secrets still redacted. */
import { describe, expect, it } from 'vitest';
import { createLogger, readableDestination, readableLine, resolveLogFormat } from '../src/log.js';

describe('LOG_FORMAT', () => {
  it('auto is readable on a terminal and JSON otherwise; pretty and json are what they say', () => {
    expect(resolveLogFormat('auto', true)).toBe('pretty');
    expect(resolveLogFormat('auto', false)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
    expect(resolveLogFormat('json', true)).toBe('json');
  });

  it('a readable line is time, level, logger/component, message and key=value, secrets redacted', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      destination: readableDestination({ write: (t) => lines.push(t) }),
    });
    log
      .child({ component: 'http' })
      .info({ host: '127.0.0.1', port: 8080, note: 'two words', token: 'abc' }, 'http listening');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d\d:\d\d:\d\d INFO {2}meshhub\/http: http listening host=127\.0\.0\.1 port=8080 note="two words" token=\[redacted\]\n$/,
    );
    expect(lines[0]).not.toContain('abc');
  });

  it('an error shows its message inline and its stack indented below', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      destination: readableDestination({ write: (t) => lines.push(t) }),
    });
    log.error({ err: new Error('disk full') }, 'write failed');
    const [head, ...stack] = lines[0]!.trimEnd().split('\n');
    expect(head).toMatch(/ERROR meshhub: write failed err="disk full"$/);
    expect(stack.length).toBeGreaterThan(0);
    expect(stack.every((l) => l.startsWith('    at '))).toBe(true);
  });

  it('passes a line that is not JSON through', () => {
    expect(readableLine('plain text')).toBe('plain text\n');
  });
});
