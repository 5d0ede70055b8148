/**
 * The audit console's AI parts in real Chromium (issue 15 "Ask", "One event"): a hub with
 * PLUGINS=audit and AI_FEATURES_ENABLED, the loopback Microsoft fake for events and the loopback
 * OpenAI-compatible fake for the model. The Ask tab, an answer with its scope notes and whether
 * the model answered, a cited event opening the drawer, the background mode with its progress,
 * and "Explain" in the drawer. (Without AI the tab and the button are absent: audit-console.test.ts.)
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type FakeChatCompletions, startFakeChatCompletions } from '../fakes/llm/fake-chat-completions.js';
import { FakeMicrosoft } from '../fakes/microsoft/fake-microsoft.js';
import { directoryAudit } from '../fakes/microsoft/fixtures.js';
import { type TestHub, waitFor } from '../helpers/hub.js';
import { describeInBrowser, useGuardedPages } from './helpers/browser.js';
import { startAuditUiHub } from './helpers/hubs.js';

describeInBrowser('audit console with AI features', () => {
  let fake: FakeMicrosoft;
  let llm: FakeChatCompletions;
  let hub: TestHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    fake = new FakeMicrosoft();
    await fake.start();
    llm = await startFakeChatCompletions();
    const now = Date.now();
    for (let i = 0; i < 8; i++)
      fake.directoryAudits.push(
        directoryAudit(i + 1, now - (i + 1) * 600_000, {
          user: 'erin@contoso.com',
          result: i === 2 ? 'failure' : 'success',
        }),
      );
    hub = await startAuditUiHub(fake, {
      AUDIT_SOURCES: 'directory',
      AI_FEATURES_ENABLED: 'true',
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: 'test-model',
      LLM_API_KEY: 'sk-test-key-0123456789',
      LLM_ALLOW_PRIVATE_NETWORK: 'true',
      LLM_TIMEOUT_MS: '2000',
      LLM_MAX_RETRIES: '0',
    });
    await fetch(`${hub.baseUrl}/api/fetch`, { method: 'POST' });
    await waitFor(
      async () => {
        const page = (await (await fetch(`${hub.baseUrl}/api/events`)).json()) as { data: unknown[] };
        return page.data.length === 8 ? true : undefined;
      },
      20_000,
      'events stored',
    );
  });

  afterAll(async () => {
    await hub?.stop();
    await llm?.stop();
    await fake?.stop();
  });

  it('answers a question with its scope and the model’s part; a cited event opens the drawer', async () => {
    llm.answer = () => 'Erin added members to groups; one attempt failed.';
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit`);
    await page.getByRole('navigation', { name: 'Audit console' }).getByRole('link', { name: 'Ask' }).click();
    await page.getByLabel('Your question').fill('What did erin@contoso.com do in the last 24 hours?');
    await page.getByRole('button', { name: 'Ask' }).click();
    const answer = page.getByTestId('ask-answer');
    await expect
      .poll(() => answer.locator('.answer-text').textContent())
      .toBe('Erin added members to groups; one attempt failed.');
    expect(await page.getByTestId('llm-used').textContent()).toBe('Answered by the language model.');
    expect(await page.getByTestId('scope-notes').textContent()).toMatch(/\d+ shown of 8 matching events/);
    await answer.locator('.cited-events button').first().click();
    await expect
      .poll(() => page.getByRole('dialog').getByRole('heading', { level: 2 }).textContent())
      .toBe('Add member to group');
    // Explain, in the drawer.
    llm.answer = () => 'A user was added to a group by Erin.';
    await page.getByRole('dialog').getByRole('button', { name: 'Explain' }).click();
    await expect
      .poll(() => page.getByRole('dialog').locator('.explain-answer .answer-text').textContent())
      .toBe('A user was added to a group by Erin.');
    await page.keyboard.press('Escape');
  });

  it('runs a question in the background, showing its progress until the answer comes', async () => {
    llm.answer = () => 'Background answer: nothing unusual.';
    const guarded = await pages.open();
    const { page } = guarded;
    await page.goto(`${hub.baseUrl}/audit/ask?actor=erin`);
    await page.getByLabel('Your question').fill('Summarise erin’s activity');
    await page.getByLabel(/Run in the background/).check();
    await page.getByRole('button', { name: 'Ask' }).click();
    await expect
      .poll(() => page.getByTestId('ask-progress').textContent())
      .toMatch(/Waiting in the queue|Working on it|Thinking/);
    await expect
      .poll(() => page.getByTestId('ask-answer').locator('.answer-text').textContent())
      .toBe('Background answer: nothing unusual.');
    expect(llm.requests.at(-1)!.body.messages[1].content).toContain('erin');
  });
});
