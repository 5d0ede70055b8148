/**
 * Traceroutes and links in real Chromium, the hub on its simulator (which reports neighbours soon
 * after the hub connects and answers traceroutes): the map draws the links coloured by SNR, and an
 * operator traces a node from its page, sees the answer hop by hop, and sees the path on the map.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HubUserService } from '../../src/auth/user-service.js';
import { messagingRoles } from '../../src/mesh/simulator/messaging-responder.js';
import { createSimNetwork } from '../../src/mesh/simulator/nodes.js';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { apiJson, SIM_CENTER, simulatedNodes, startUiHub } from './helpers/hubs.js';

const PASSWORD = 'field-radio-42';

interface LinkJson {
  from: string;
  to: string;
}

describeInBrowser('traceroutes and links', () => {
  let hub: TestHub;
  const pages = useGuardedPages();

  /** A bearer token for a new user with `roles`, put in the page's session as the sign-in form would. */
  async function signedInAs(username: string, roles: string[]) {
    await new HubUserService(hub.hub.store.db).add({ username, password: PASSWORD, roles });
    const res = await fetch(`${hub.baseUrl}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, password: PASSWORD }),
    });
    const { access_token: token, refresh_token: refreshToken } = (await res.json()) as {
      access_token: string;
      refresh_token: string;
    };
    return { token, username, refreshToken, expiresAt: Date.now() + 600_000 };
  }

  beforeAll(async () => {
    hub = await startUiHub({ SIM_SEED: '1', SIM_ACK_DELAY_SCALE: '0.1' });
    await simulatedNodes(hub);
  });
  afterAll(async () => {
    await hub?.stop();
  });

  it('the map draws the links the nodes report, coloured by SNR', async () => {
    const links = await waitFor(
      async () => {
        const { data } = await apiJson<{ data: LinkJson[] }>(hub, '/api/v1/links');
        return data.length >= 6 ? data : undefined;
      },
      15_000,
      'the neighbour reports',
    );
    expect(links.length).toBeGreaterThanOrEqual(6);
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    await page.locator('.node-marker').first().waitFor();
    await waitFor(
      async () => ((await page.locator('path.mesh-link').count()) > 0 ? true : undefined),
      10_000,
      'link lines',
    );
    const classes = await page
      .locator('path.mesh-link')
      .evaluateAll((paths) =>
        paths.map(
          (p) => (p as unknown as { getAttribute(n: string): string | null }).getAttribute('class') ?? '',
        ),
      );
    for (const c of classes) expect(c).toMatch(/snr-(good|fair|poor|unknown)/);
    expect(classes.some((c) => /snr-(good|fair|poor)/.test(c))).toBe(true);
    await screenshot(page, 'map-links');
  });

  it('an operator traces a node from its page: the answer hop by hop, then its path on the map', async () => {
    const out = messagingRoles(createSimNetwork({ seed: 1, nodeCount: 6, center: SIM_CENTER })).outOfRange;
    const nodes = await simulatedNodes(hub);
    const myNum = hub.hub.bus.last('radio.status')?.myNodeNum;
    const hubId = myNum === undefined ? undefined : `!${myNum.toString(16).padStart(8, '0')}`;
    const target = nodes.find(
      (n) => n.node_id !== out?.id && n.node_id !== hubId && n.latitude !== undefined,
    )!;

    // Without a sign-in there is no button, but the neighbours are listed.
    const anonymous = await pages.open();
    await anonymous.page.goto(`${hub.baseUrl}/nodes/${encodeURIComponent(target.node_id)}`);
    await anonymous.page.getByTestId('topology-panel').waitFor();
    await anonymous.page.getByTestId('neighbour').first().waitFor();
    expect(await anonymous.page.getByRole('button', { name: 'Traceroute' }).count()).toBe(0);

    const session = await signedInAs('ops', ['operator']);
    const guarded = await pages.open();
    const { page } = guarded;
    // An operator who is no subscriber gets no chat: no messages stream is asked for, and none refused.
    await page.addInitScript((saved) => {
      (
        globalThis as unknown as { sessionStorage: { setItem(k: string, v: string): void } }
      ).sessionStorage.setItem('meshhub.session', saved);
    }, JSON.stringify(session));
    await page.goto(`${hub.baseUrl}/nodes/${encodeURIComponent(target.node_id)}`);
    await page.getByRole('button', { name: 'Traceroute' }).click();
    const answered = page.locator('[data-testid="traceroute"][data-status="answered"]');
    await answered.waitFor({ timeout: 15_000 });
    // The way out ends at the traced node, with an SNR shown for the hop.
    const way = answered.locator('[data-path="Out"]');
    await expect(way.locator(`[data-hop="${target.node_id}"] .snr-chip`).textContent()).resolves.toMatch(
      /dB/,
    );
    expect(await answered.locator('[data-path="Back"]').count()).toBe(1);
    await screenshot(page, 'node-traceroute');

    await answered.getByRole('link', { name: 'Show on map' }).click();
    await page.waitForURL(/traceroute=/);
    await waitFor(
      async () => ((await page.locator('path.mesh-trace').count()) > 0 ? true : undefined),
      10_000,
      'the traceroute path',
    );
    await screenshot(page, 'map-traceroute');
  });
});
