/**
 * Chat in real Chromium against a real hub whose radio is the simulator: sign in, send, watch
 * the status go to delivered, a reply arriving with an unread badge, reading it; and every
 * refusal in plain words (too long, not in the subscription, too fast, an unreachable node,
 * an expired sign-in).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SIM_REPLIES } from '../../src/mesh/simulator/messaging-responder.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { type ChatHub, PASSWORD, startChatHub } from './helpers/chat-hub.js';
import type { BrowserWindow } from './helpers/dom.js';

async function signIn(page: Page, baseUrl: string, username: string, password = PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/chat`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (password === PASSWORD) await page.locator('.conversations').waitFor();
}

async function openThread(page: Page, nodeId: string): Promise<void> {
  await page.getByRole('button', { name: 'New message' }).click();
  await page.getByLabel('To node').selectOption(nodeId);
  await page.getByRole('button', { name: 'Open' }).click();
  await page.waitForURL(/\/chat\/!/);
  await page.getByLabel(/^Message to /).waitFor();
}

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel(/^Message to /).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

const bubble = (page: Page, text: string) => page.locator('.message', { hasText: text });

describeInBrowser('chat', () => {
  let chat: ChatHub;
  const pages = useGuardedPages();

  beforeAll(async () => {
    chat = await startChatHub({ MESSAGE_RATE_PER_SUBSCRIBER: '3/1h' });
    await chat.addUser('ana', 'all');
  });

  afterAll(async () => {
    await chat?.stop();
  });

  /** A new user allowed every node, signed in on a new page that shows the conversation with `nodeId`. */
  async function openConversation(username: string, nodeId: string): Promise<Page> {
    await chat.addUser(username, 'all');
    const { page } = await pages.open();
    await signIn(page, chat.hub.baseUrl, username);
    await page.goto(`${chat.hub.baseUrl}/chat/${nodeId}`);
    return page;
  }

  it('signs in, sends a message, watches it go to delivered, and reads the reply that arrives later', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    const base = chat.hub.baseUrl;
    // As on a LAN address (http://192.168.x.x): not a secure context, so no crypto.randomUUID.
    await page.addInitScript(() => {
      Object.defineProperty(globalThis.crypto, 'randomUUID', { value: undefined });
    });
    guarded.expectFailedRequests(/\/api\/v1\/auth\/token$/);

    await signIn(page, base, 'ana', 'not-the-password');
    await expect
      .poll(() => page.getByTestId('sign-in-error').innerText())
      .toBe('Wrong username or password.');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('main').innerText()).toContain('No conversations yet');

    await openThread(page, chat.replier.id);
    expect(await page.locator('#thread-heading').innerText()).toBe(chat.replier.longName);
    await page.getByLabel(/^Message to /).fill('Are you back at the hut?');
    expect(await page.getByTestId('composer-counter').innerText()).toBe('24/200 characters · 24/233 bytes');
    await page.getByRole('button', { name: 'Send' }).click();

    const mine = bubble(page, 'Are you back at the hut?');
    await mine.waitFor();
    expect(['queued', 'sent', 'delivered']).toContain(await mine.getAttribute('data-status'));
    await expect.poll(() => mine.getAttribute('data-status'), { timeout: 20_000 }).toBe('delivered');
    expect(await mine.locator('.status').innerText()).toContain('Delivered');
    expect(await page.getByLabel(/^Message to /).inputValue()).toBe('');

    // The person answers while the user looks at the map.
    await page.getByRole('link', { name: 'Map', exact: true }).click();
    await page.locator('.node-marker').first().waitFor();
    await waitFor(() => chat.gate.waiting > 0, 20_000, 'the simulated reply');
    chat.gate.release();
    await expect
      .poll(() => page.getByTestId('unread-total').innerText(), { timeout: 15_000 })
      .toMatch(/^1\s*unread$/);

    await page.getByRole('link', { name: /^Chat/ }).click();
    const row = page.locator(`.conversation-list li[data-node-id="${chat.replier.id}"]`);
    await expect.poll(() => row.getByTestId('unread-badge').innerText()).toMatch(/^1\s*unread$/);
    const reply = (await row.locator('.conversation-latest').innerText()).trim();
    expect(SIM_REPLIES as readonly string[]).toContain(reply);
    await screenshot(page, 'chat-unread');

    await row.locator('a').click();
    const theirs = page.locator('.message-inbound', { hasText: reply });
    await theirs.waitFor();
    await expect.poll(() => row.getByTestId('unread-badge').count()).toBe(0);
    await expect.poll(() => page.getByTestId('unread-total').count()).toBe(0);
    await screenshot(page, 'chat-thread');
  });

  it('refuses an over-long message before sending, saying why', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    let posts = 0;
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/api/v1/messages')) posts++;
    });
    await signIn(page, chat.hub.baseUrl, 'ana');
    await page.goto(`${chat.hub.baseUrl}/chat/${chat.other.id}`);
    const box = page.getByLabel(/^Message to /);
    const sendButton = page.getByRole('button', { name: 'Send' });

    await box.fill('a'.repeat(201));
    expect(await page.getByTestId('composer-counter').innerText()).toBe('201/200 characters · 201/233 bytes');
    expect(await page.getByTestId('composer-counter').getAttribute('class')).toContain('counter-over');
    expect(await page.getByTestId('composer-problem').innerText()).toBe(
      'Too long: 201 of at most 200 characters.',
    );
    expect(await sendButton.isDisabled()).toBe(true);
    await box.press('Enter');

    // 60 characters, but 240 bytes: more than one radio packet.
    await box.fill('🍂'.repeat(60));
    expect(await page.getByTestId('composer-counter').innerText()).toBe('60/200 characters · 240/233 bytes');
    expect(await page.getByTestId('composer-problem').innerText()).toMatch(
      /^Too long for one radio packet: 240 of at most 233 bytes/,
    );
    expect(await sendButton.isDisabled()).toBe(true);
    await box.press('Enter');
    expect(posts).toBe(0);

    await box.fill('🍂'.repeat(58));
    expect(await sendButton.isDisabled()).toBe(false);
  });

  it('explains a node outside the subscription (403) and sending too fast (429, with the wait)', async () => {
    await chat.addUser('bo', [chat.replier.id]);
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/v1\/messages$/);
    await signIn(page, chat.hub.baseUrl, 'bo');
    await page.goto(`${chat.hub.baseUrl}/chat/${chat.other.id}`);
    await send(page, 'Hello?');
    await expect
      .poll(() => page.getByTestId('composer-error').innerText())
      .toBe(`You can't message ${chat.other.longName}: this node is not in your subscription.`);
    expect(await page.getByLabel(/^Message to /).inputValue()).toBe('Hello?');
    expect(await page.locator('.message').count()).toBe(0);

    // Three messages an hour each (MESSAGE_RATE_PER_SUBSCRIBER=3/1h): the fourth waits.
    await page.goto(`${chat.hub.baseUrl}/chat/${chat.replier.id}`);
    for (const text of ['one', 'two', 'three']) {
      await send(page, text);
      await bubble(page, text).waitFor();
    }
    await send(page, 'four');
    await expect
      .poll(() => page.getByTestId('composer-wait').innerText())
      .toMatch(/^You are sending too fast for the mesh\. You can send again in \d+ s\.$/);
    const seconds = Number(/in (\d+) s/.exec(await page.getByTestId('composer-wait').innerText())![1]);
    expect(seconds).toBeGreaterThan(60);
    expect(await page.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);
    expect(await bubble(page, 'four').count()).toBe(0);
  });

  it('shows why a message could not be delivered', async () => {
    const page = await openConversation('cy', chat.outOfRange.id);
    // Sent without a hold (as an API client may ask): it fails after the retries.
    const signedIn = await fetch(`${chat.hub.baseUrl}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'cy', password: PASSWORD }),
    });
    const token = ((await signedIn.json()) as { access_token: string }).access_token;
    const posted = await fetch(`${chat.hub.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ target_node_id: chat.outOfRange.id, text: 'Can you hear me?', hold_hours: 0 }),
    });
    expect(posted.status).toBe(202);
    const mine = bubble(page, 'Can you hear me?');
    await expect.poll(() => mine.getAttribute('data-status'), { timeout: 20_000 }).toBe('failed');
    await expect
      .poll(() => mine.getByTestId('failure-reason').innerText())
      .toBe('The radio repeated it but no node acknowledged it (the node may be out of range or off)');
    // After a reload the reason is still there (fetched from the message itself).
    await page.reload();
    await expect
      .poll(() => bubble(page, 'Can you hear me?').getByTestId('failure-reason').innerText())
      .toMatch(/^The radio repeated it/);
    // The conversation says a text was not delivered.
    const row = page.locator(`.conversation-list li[data-node-id="${chat.outOfRange.id}"]`);
    await expect.poll(() => row.getByTestId('failed-badge').innerText()).toBe('⚠ 1 not delivered');
    expect(await row.getByTestId('waiting-badge').count()).toBe(0);

    // Send again: the same text to the same node, as a new message (with this hub's hold: it waits).
    await bubble(page, 'Can you hear me?').getByRole('button', { name: 'Send again' }).click();
    await expect.poll(() => bubble(page, 'Can you hear me?').count()).toBe(2);
    const again = bubble(page, 'Can you hear me?').nth(1);
    expect(await again.getAttribute('data-status')).toBe('queued');
    expect(await again.getByRole('button', { name: 'Send again' }).count()).toBe(0);
    await expect.poll(() => row.getByTestId('waiting-badge').innerText()).toBe('◷ 1 waiting');
    const listed = await fetch(`${chat.hub.baseUrl}/api/v1/messages/conversations/${chat.outOfRange.id}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const texts = ((await listed.json()) as { data: Array<{ text: string; status: string }> }).data;
    expect(texts.map((m) => [m.text, m.status])).toEqual([
      ['Can you hear me?', 'failed'],
      ['Can you hear me?', 'queued'],
    ]);
  });

  it('shows a text waiting for a node out of range, with when it was last heard', async () => {
    const page = await openConversation('eve', chat.outOfRange.id);
    await send(page, 'Call me when you are back');
    const mine = bubble(page, 'Call me when you are back');
    // The node by its name once the hub has its NodeInfo, else by its id.
    const names = [chat.outOfRange.longName, chat.outOfRange.id].map((n) =>
      n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    );
    await expect
      .poll(
        () =>
          mine
            .getByTestId('waiting-for')
            .innerText()
            .catch(() => ''),
        { timeout: 30_000 },
      )
      .toMatch(
        // The simulator's unreachable node still sends telemetry: heard lately, it is not "out of range".
        new RegExp(
          `^(Waiting for (${names.join('|')}) to come in range \\((last heard (just now|.+ ago)|never heard)\\)|(${names.join('|')}) was heard (just now|.+ ago) but is not acknowledging; trying again (by .+|soon))$`,
        ),
      );
    expect(await mine.getAttribute('data-status')).toBe('queued');
    // After a reload it still says so (from the message itself).
    await page.reload();
    await expect
      .poll(() =>
        bubble(page, 'Call me when you are back')
          .getByTestId('waiting-for')
          .innerText()
          .catch(() => ''),
      )
      .toMatch(/^Waiting for | but is not acknowledging; /);
  });

  it('shows new replies live in the open conversation, and can name it', async () => {
    const page = await openConversation('dee', chat.replier.id);
    await send(page, 'Status?');
    await expect
      .poll(() => bubble(page, 'Status?').getAttribute('data-status'), { timeout: 20_000 })
      .toBe('delivered');
    await waitFor(() => chat.gate.waiting > 0, 20_000, 'the simulated reply');
    chat.gate.release();
    await page.locator('.message-inbound').first().waitFor({ timeout: 15_000 });

    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Nickname').fill('Ridge crew');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('#thread-heading').innerText()).toBe('Ridge crew');
    await expect
      .poll(() =>
        page
          .locator(`.conversation-list li[data-node-id="${chat.replier.id}"] .conversation-name`)
          .innerText(),
      )
      .toBe('Ridge crew');
  });

  it('works on a 360-px-wide phone: the list, then the conversation with a way back', async () => {
    const guarded = await pages.open({ width: 360, height: 740 });
    const { page } = guarded;
    await signIn(page, chat.hub.baseUrl, 'ana');
    const row = page.locator(`.conversation-list li[data-node-id="${chat.replier.id}"] a`);
    await row.click();
    await page.getByLabel(/^Message to /).waitFor();
    await page.locator('.message').first().waitFor();
    await screenshot(page, 'chat-360');
    expect(
      await page.evaluate(
        () => (globalThis as unknown as BrowserWindow).document.querySelector('main')!.scrollWidth,
      ),
    ).toBeLessThanOrEqual(360);
    expect(await page.locator('.conversations').isVisible()).toBe(false);
    await page.getByRole('link', { name: '← Conversations' }).click();
    await row.waitFor();
    expect(await page.locator('.thread').count()).toBe(1);
  });

  it('sends an expired sign-in back to the sign-in form with a message, and signs out', async () => {
    const guarded = await pages.open();
    const { page } = guarded;
    guarded.expectFailedRequests(/\/api\/v1\/messages\//);
    await signIn(page, chat.hub.baseUrl, 'ana');
    await page.locator('.conversation-list').waitFor();

    // The hub says the token expired (the browser's clock may be wrong: the hub decides).
    const expired = await chat.hub.hub.identity.localIssuer.issue(
      { username: 'ana', roles: ['subscriber'] },
      60,
      Date.now() - 3_600_000,
    );
    await page.evaluate((token) => {
      const session = JSON.parse(
        (globalThis as unknown as BrowserWindow).sessionStorage.getItem('meshhub.session')!,
      );
      (globalThis as unknown as BrowserWindow).sessionStorage.setItem(
        'meshhub.session',
        // Without its refresh token: a session that can no longer be refreshed.
        JSON.stringify({ ...session, token, expiresAt: Date.now() + 3_600_000, refreshToken: undefined }),
      );
    }, expired.accessToken);
    await page.reload();
    await expect
      .poll(() => page.getByTestId('sign-in-notice').innerText())
      .toBe('Your session expired. Please sign in again.');
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as BrowserWindow).sessionStorage.getItem('meshhub.session'),
      ),
    ).toBeNull();

    // A session that runs out while the page is open ends by itself, with the same message.
    await page.getByLabel('Username').fill('ana');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.conversation-list').waitFor();
    await page.evaluate(() => {
      const session = JSON.parse(
        (globalThis as unknown as BrowserWindow).sessionStorage.getItem('meshhub.session')!,
      );
      (globalThis as unknown as BrowserWindow).sessionStorage.setItem(
        'meshhub.session',
        JSON.stringify({ ...session, expiresAt: Date.now() + 1_500, refreshToken: undefined }),
      );
    });
    await page.reload();
    await page.locator('.conversation-list').waitFor();
    await expect
      .poll(() => page.getByTestId('sign-in-notice').innerText(), { timeout: 10_000 })
      .toBe('Your session expired. Please sign in again.');

    await signIn(page, chat.hub.baseUrl, 'ana');
    await page.locator('.conversation-list').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect.poll(() => page.getByTestId('sign-in-notice').innerText()).toBe('You signed out.');
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as BrowserWindow).sessionStorage.getItem('meshhub.session'),
      ),
    ).toBeNull();
  });
});
