/**
 * The audit API's refusals in plain words, next to what caused them (issue 15 "Bad input"), in
 * real Chromium against real hubs with PLUGINS=audit: 403 (a privacy-gated event, in the event
 * drawer), 404 (an event that does not exist, in the drawer), 429 with Retry-After (the `fetch`
 * rate-limit tier set to one an hour, under the button, which then waits), and 503 (AUTH_ENABLED
 * with the identity provider half set up, over the search). (400 with field errors:
 * audit-console.test.ts; no credentials, where "Fetch now" is off: audit-console-unconfigured.test.ts.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAuditRepositories } from '../../plugins/audit/store/audit-store.js';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import type { TestHub } from '../helpers/hub.js';
import { QUIET_ENV, seed } from '../plugins/audit/helpers.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startUiHub } from './helpers/hubs.js';

const GATED = 'Reset user password';

describeInBrowser('audit console errors', () => {
  /** Collecting from a fake Microsoft, auth off, a gated operation, one fetch an hour. */
  let hub: TestHub;
  let microsoft: FakeMicrosoft;
  /** AUTH_ENABLED with AUTH_ISSUER but neither AUTH_JWKS_URL nor AUTH_AUDIENCE. */
  let misconfigured: TestHub;
  const pages = useGuardedPages();
  let gatedId: number;

  beforeAll(async () => {
    microsoft = new FakeMicrosoft();
    await microsoft.start();
    const audit = { PLUGINS: 'audit', ...QUIET_ENV };
    [hub, misconfigured] = await Promise.all([
      startUiHub({
        ...audit,
        ...microsoft.env(),
        AUDIT_SOURCES: 'directory',
        PRIVACY_SENSITIVE_OPERATIONS: GATED,
        RATE_LIMIT_FETCH: '1/1h',
      }),
      startUiHub({ ...audit, AUTH_ENABLED: 'true', AUTH_ISSUER: 'https://login.example.org/tenant/v2.0' }),
    ]);
    const now = Date.now();
    seed(openAuditRepositories(hub.hub.store.db), [
      { source: 'directory', operation: GATED, actor: 'gus@contoso.com', at: now - 60_000, id: 'gated-1' },
      {
        source: 'directory',
        operation: 'Add user',
        actor: 'gus@contoso.com',
        at: now - 120_000,
        id: 'plain-1',
      },
    ]);
    const row = hub.hub.store.db
      .prepare("SELECT seq FROM audit_events WHERE source = 'directory' AND source_key = 'gated-1'")
      .get() as { seq: number };
    gatedId = row.seq;
  });

  afterAll(async () => {
    await Promise.all([hub?.stop(), misconfigured?.stop()]);
    await microsoft?.stop();
  });

  it('says 403, 404, 429 and 503 in plain words next to what caused them', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/(events\/\d+|fetch)$/);

    // 403: a link to an event the caller's roles do not allow; the drawer says so.
    await page.goto(`${hub.baseUrl}/audit?event=${gatedId}`);
    const drawer = page.getByRole('dialog');
    await expect
      .poll(() => drawer.getByRole('alert').textContent())
      .toBe('Not allowed: this event is restricted; your role does not allow you to see it.');
    expect(await drawer.textContent()).not.toContain(GATED);
    // Only the event that may be seen is listed.
    expect(await page.locator('[data-testid="audit-events"] tbody tr').count()).toBe(1);
    await page.keyboard.press('Escape');

    // 404: an event that is not there.
    await page.goto(`${hub.baseUrl}/audit?event=987654`);
    await expect
      .poll(() => page.getByRole('dialog').getByRole('alert').textContent())
      .toBe('No event with id 987654.');

    // The first "Fetch now" starts a fetch; the words sit under the button.
    await page.goto(`${hub.baseUrl}/audit/sources`);
    const fetchNow = page.getByRole('button', { name: 'Fetch now' });
    const status = page.getByTestId('fetch-status');
    await fetchNow.click();
    await expect
      .poll(() => status.textContent())
      .toMatch(/^(Fetch started for directory\.|A fetch was already queued; it runs shortly\.)$/);
    expect(await fetchNow.getAttribute('aria-describedby')).toBe('fetch-status');

    // 429: the second fetch within the hour (RATE_LIMIT_FETCH=1/1h), with the wait from Retry-After.
    await fetchNow.click();
    await expect
      .poll(() => status.textContent())
      .toMatch(/^Too many fetch requests from this computer for now\. Try again in (60|59) min\.$/);
    expect(await fetchNow.isDisabled()).toBe(true);

    // 503: AUTH_ENABLED with the identity provider half set up; the search says why it is locked.
    guarded.expectFailedRequests(/\/api\/filter-options$/);
    await page.goto(`${misconfigured.baseUrl}/audit`);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe(
        'The audit API did not answerSign-in is switched on (AUTH_ENABLED) but not fully set up, so the audit data is locked. An administrator must complete the identity provider settings.',
      );
    expect(await page.getByTestId('auth-button').textContent()).toBe('Auth: misconfigured');
  });
});
