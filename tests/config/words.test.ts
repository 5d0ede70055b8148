/**
 * Every kind of setting (src/config/fields.ts and plain zod) says what it expects in words, by
 * name, with the value given; a missing required one says it is required and what to set it to.
 */

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadHubSettings } from '../../hub/settings.js';
import { duration, flag, int, list, port, rate, text } from '../../src/config/fields.js';
import { ConfigError, loadSettings } from '../../src/config/load.js';
import { configProblems } from '../helpers/config.js';

const kinds = z.object({
  COUNT: int(1, 10),
  PORT: port,
  RATIO: z.coerce.number().min(0).max(1),
  ON: flag,
  EVERY: duration,
  LIMIT: rate,
  NAMES: list,
  MODE: z.enum(['fast', 'slow']),
  HOME: z.url(),
  LABEL: text.min(1),
  NEEDED: text.min(1, 'required: the name of the site, e.g. north-ridge'),
  ALSO_NEEDED: z.string(),
});

const problemsOf = (env: NodeJS.ProcessEnv) => configProblems(() => loadSettings(env, kinds, []));

describe('settings in words', () => {
  it('each kind of field says what it expects, never zod\'s "expected number, received NaN"', () => {
    const problems = problemsOf({
      COUNT: 'many',
      PORT: '99999',
      RATIO: 'half',
      ON: 'maybe',
      EVERY: 'soon',
      LIMIT: 'lots',
      NAMES: 'a,b',
      MODE: 'warp',
      HOME: 'not a url',
      LABEL: 'x',
      NEEDED: 'here',
      ALSO_NEEDED: 'here',
    });
    expect(problems).toEqual([
      'COUNT: must be a whole number from 1 to 10 (got "many")',
      'PORT: must be a whole number from 1 to 65535, or 0 for any free port (got "99999")',
      'RATIO: must be a number (got "half")',
      'ON: must be true or false (also yes/no, on/off, 1/0) (got "maybe")',
      'EVERY: must be a duration like 90s, 15m, 24h or 30d (got "soon")',
      'LIMIT: must be a count per window like 10/5m or 100/1h (got "lots")',
      'MODE: must be one of fast, slow (got "warp")',
      'HOME: must be a URL like https://host/path (got "not a url")',
    ]);
    expect(problemsOf({ RATIO: '2', COUNT: '2.5', NEEDED: 'x', ALSO_NEEDED: 'y' })).toEqual([
      'COUNT: must be a whole number from 1 to 10 (got "2.5")',
      'PORT: is required',
      'RATIO: must be at most 1 (got "2")',
      'ON: is required',
      'EVERY: is required',
      'LIMIT: is required',
      'NAMES: is required',
      'MODE: is required',
      'HOME: is required',
      'LABEL: is required',
    ]);
  });

  it('a missing required setting says what to set it to when its schema says', () => {
    const problems = problemsOf({});
    expect(problems).toContain('NEEDED: is required: set it to the name of the site, e.g. north-ridge');
    expect(problems).toContain('ALSO_NEEDED: is required');
    expect(problems.join('\n')).not.toMatch(/expected|received|undefined/);
  });

  it('one problem is one line; more are listed under "invalid configuration"', () => {
    expect(new ConfigError(['HTTP_PORT: must be …']).message).toBe('HTTP_PORT: must be …');
    expect(new ConfigError(['A: x', 'B: y']).message).toBe('invalid configuration:\n  - A: x\n  - B: y');
  });

  it("the billing plugin's BTCPAY_* settings, missing, say what each is", async () => {
    const { loadPlugins } = await import('../../plugins/index.js');
    const plugins = await loadPlugins(['billing']);
    const problems = configProblems(() => loadHubSettings({ PLUGINS: 'billing' }, plugins));
    expect(problems).toEqual(
      expect.arrayContaining([
        'BTCPAY_URL: is required: set it to the BTCPay Server address, e.g. https://btcpay.example.org',
        'BTCPAY_STORE_ID: is required: set it to the store id from BTCPay (Store settings → General)',
        'BTCPAY_API_KEY: is required: set it to a Greenfield API key of the store',
        'BTCPAY_WEBHOOK_SECRET: is required: set it to the webhook secret, at least 8 characters',
      ]),
    );
  });

  it('the hub: HTTP_PORT=abc and LOG_LEVEL=loud in words', () => {
    const problems = configProblems(() =>
      loadHubSettings({ HTTP_PORT: 'abc', LOG_LEVEL: 'loud', LOG_FORMAT: 'fancy' }, []),
    );
    expect(problems).toEqual([
      'HTTP_PORT: must be a whole number from 1 to 65535, or 0 for any free port (got "abc")',
      'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
      'LOG_FORMAT: must be one of auto, pretty, json (got "fancy")',
    ]);
  });
});
