/**
 * The billing settings, validated with the hub's at start-up: required BTCPay settings named at
 * once, https unless BTCPAY_ALLOW_PRIVATE_NETWORK, secrets never echoed or printed.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { billingModule } from '../../../plugins/billing/index.js';
import { type BillingSettings, billingConfigFrom } from '../../../src/billing/settings.js';
import { ConfigError, loadSlices } from '../../../src/config/load.js';

const GOOD = {
  BTCPAY_URL: 'https://btcpay.example.org',
  BTCPAY_STORE_ID: 'Store1',
  BTCPAY_API_KEY: 'key-that-must-not-leak',
  BTCPAY_WEBHOOK_SECRET: 'secret-that-must-not-leak',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadSlices(env, [billingModule]);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected the settings to be refused');
}

describe('billing settings', () => {
  it('has defaults: 24 h grace, a poll every 5 minutes, expiry every minute', () => {
    const settings = loadSlices(GOOD, [billingModule]).get('billing') as BillingSettings;
    const config = billingConfigFrom(settings);
    expect(config).toMatchObject({
      graceMs: 24 * 3_600_000,
      pollCron: '*/5 * * * *',
      expiryCron: '* * * * *',
    });
  });

  it('names every missing setting at once', () => {
    expect(
      problems({})
        .map((p) => p.split(':')[0])
        .sort(),
    ).toEqual(['BTCPAY_API_KEY', 'BTCPAY_STORE_ID', 'BTCPAY_URL', 'BTCPAY_WEBHOOK_SECRET']);
  });

  it('requires https unless BTCPAY_ALLOW_PRIVATE_NETWORK=true', () => {
    expect(problems({ ...GOOD, BTCPAY_URL: 'http://btcpay.lan' })[0]).toMatch(/^BTCPAY_URL: must use https/);
    expect(problems({ ...GOOD, BTCPAY_URL: 'http://127.0.0.1:23000' })[0]).toMatch(/^BTCPAY_URL: /);
    expect(problems({ ...GOOD, BTCPAY_URL: 'https://user:pw@btcpay.example.org' })[0]).toMatch(
      /^BTCPAY_URL: /,
    );
    for (const url of ['http://127.0.0.1:23000', 'http://btcpay.lan', 'https://10.0.0.5']) {
      expect(
        loadSlices({ ...GOOD, BTCPAY_URL: url, BTCPAY_ALLOW_PRIVATE_NETWORK: 'true' }, [billingModule]).size,
      ).toBe(1);
    }
  });

  it('takes BILLING_REDIRECT_URL only as an http(s) URL', () => {
    expect(problems({ ...GOOD, BILLING_REDIRECT_URL: 'javascript:alert(1)' })[0]).toMatch(
      /^BILLING_REDIRECT_URL: expected an http\(s\) URL/,
    );
    const ok = loadSlices({ ...GOOD, BILLING_REDIRECT_URL: 'https://hub.local/billing' }, [billingModule]);
    expect(billingConfigFrom(ok.get('billing') as BillingSettings).redirectUrl).toBe(
      'https://hub.local/billing',
    );
  });

  it('never echoes or prints a secret', () => {
    const shown = problems({ ...GOOD, BTCPAY_WEBHOOK_SECRET: 'short', BILLING_GRACE_HOURS: '-1' });
    expect(shown.join('\n')).not.toContain('short');
    expect(shown.join('\n')).toContain('BILLING_GRACE_HOURS: ');
    const config = billingConfigFrom(loadSlices(GOOD, [billingModule]).get('billing') as BillingSettings);
    const printed = `${inspect(config)} ${JSON.stringify(config)} ${String(config.apiKey)}`;
    expect(printed).not.toContain('key-that-must-not-leak');
    expect(printed).not.toContain('secret-that-must-not-leak');
    expect(config.apiKey.reveal()).toBe('key-that-must-not-leak');
  });
});
