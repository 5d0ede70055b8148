/** The paging every list shares: limit, the opaque cursor codec, and the Link to the next page. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cursorCodec, limitReader, nextPageHeaders, readCursor } from '../../src/http/paging.js';
import { ProblemError } from '../../src/http/problem.js';

const codec = cursorCodec(z.strictObject({ t: z.int(), n: z.string() }));
const b64 = (text: string) => Buffer.from(text).toString('base64url');

function problemOf(run: () => unknown): ProblemError {
  try {
    run();
  } catch (error) {
    if (error instanceof ProblemError) return error;
    throw error;
  }
  throw new Error('no problem was thrown');
}

describe('cursorCodec', () => {
  it('round-trips a position through an opaque base64url token', () => {
    const token = codec.encode({ t: 1_746_057_600_000, n: '!a1b2c3d4' });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(codec.decode(token)).toEqual({ t: 1_746_057_600_000, n: '!a1b2c3d4' });
  });

  it('gives one position one token, whatever order its keys were written in', () => {
    expect(codec.encode({ n: 'x', t: 1 } as never)).toBe(codec.encode({ t: 1, n: 'x' }));
  });

  it.each([
    ['not base64url', 'not a cursor!'],
    ['not JSON', b64('garbage')],
    ['a wrong position', b64('{"t":"1","n":"x"}')],
    ['an extra field', b64('{"t":1,"n":"x","x":1}')],
    ['keys in another order', b64('{"n":"x","t":1}')],
    ['spacing this API never writes', b64('{"t":1, "n":"x"}')],
    ['overlong', 'A'.repeat(201)],
  ])('refuses %s', (_name, token) => {
    expect(codec.decode(token)).toBeUndefined();
  });

  it('refuses another spelling of the same bytes (other padding bits)', () => {
    const token = codec.encode({ t: 1, n: 'xy' });
    const last = token.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twins = [...alphabet]
      .map((ch) => token.slice(0, -1) + ch)
      .filter((t) => t !== token && Buffer.from(t, 'base64url').equals(Buffer.from(token, 'base64url')));
    expect(twins.length).toBeGreaterThan(0);
    for (const twin of twins) expect(codec.decode(twin), `${last} → ${twin.at(-1)}`).toBeUndefined();
  });

  it('readCursor answers 400 naming cursor with the list’s own message', () => {
    const problem = problemOf(() => readCursor(codec, 'nope', 'is not a cursor of this list'));
    expect(problem.status).toBe(400);
    expect(problem.toBody()).toMatchObject({
      detail: 'invalid cursor',
      errors: [{ field: 'cursor', message: 'is not a cursor of this list' }],
    });
  });
});

describe('limitReader', () => {
  const read = limitReader({ default: 50, max: 500 });

  it('takes the default when absent and the value when it is an integer in range', () => {
    expect(read(undefined)).toBe(50);
    expect(read('1')).toBe(1);
    expect(read('500')).toBe(500);
    expect(read('0500')).toBe(500);
  });

  it.each(['0', '501', '-1', '1.5', 'ten', '1e2', '', '00500'])(
    'answers 400 naming limit for %j',
    (value) => {
      expect(problemOf(() => read(value)).toBody()).toMatchObject({
        status: 400,
        errors: [{ field: 'limit', message: 'must be an integer from 1 to 500' }],
      });
    },
  );
});

describe('nextPageHeaders', () => {
  it('repeats the parameters with the next cursor in a Link rel="next"', () => {
    expect(nextPageHeaders('/api/v1/x', { node_id: '!a', limit: '10' }, 'abc')).toEqual({
      link: '</api/v1/x?node_id=%21a&limit=10&cursor=abc>; rel="next"',
    });
  });

  it('has no Link on the last page', () => {
    expect(nextPageHeaders('/api/v1/x', { limit: '10' }, undefined)).toEqual({});
  });
});
