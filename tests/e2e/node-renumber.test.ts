/**
 * A node renumbered by firmware 2.8, in real Chromium: the simulator's first node in range takes
 * the number derived from its key a few seconds in (SIM_RENUMBER_AFTER_MINUTES); the node list
 * and the node's page say "was !old", and a page opened by the old id names the node it is now.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestHub } from '../helpers/hub.js';
import { waitFor } from '../helpers/hub.js';
import { describeInBrowser, screenshot, useGuardedPages } from './helpers/browser.js';
import { type ApiNode, apiJson, startUiHub } from './helpers/hubs.js';

type RenumberedNode = ApiNode & { previous_ids?: string[] };

describeInBrowser('a renumbered node in the UI', () => {
  const pages = useGuardedPages();
  let node: RenumberedNode;
  let oldId: string;
  let hub: TestHub;

  beforeAll(async () => {
    // Ten minutes of history, not the UI hubs' 24 hours: replayed at once on a loaded machine
    // (the first seconds of the e2e run: every file starting its hub and Chromium), 24 hours of
    // packets overflowed the node table's mailbox (drop-oldest), and it shed the NodeInfo that
    // carries the old number's key; the hub could then never link the two (CI failed that way).
    hub = await startUiHub({
      SIM_BACKFILL: '10m',
      SIM_RENUMBER_AFTER_MINUTES: '0.1',
      NODE_RENUMBER_QUIET: '0s',
    });
    node = await waitFor(
      async () => {
        const { data } = await apiJson<{ data: RenumberedNode[] }>(hub, '/api/v1/nodes');
        return data.find((n) => (n.previous_ids?.length ?? 0) > 0 && n.long_name);
      },
      30_000,
      'a renumbered node',
    );
    oldId = node.previous_ids![0]!;
  });

  afterAll(async () => {
    await hub?.stop();
  });

  it('says "was !old" in the node list and on the node’s page', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/`);
    const item = page.locator(`.node-item[data-node-id="${node.node_id}"]`);
    await expect.poll(() => item.locator('[data-testid="node-was"]').innerText()).toContain(`was ${oldId}`);
    await expect.poll(() => page.locator(`.node-item[data-node-id="${oldId}"]`).count()).toBe(0);

    await page.goto(`${hub.baseUrl}/nodes/${node.node_id}`);
    await expect.poll(() => page.locator('h1').innerText()).toContain(node.long_name!);
    await expect.poll(() => page.locator('[data-testid="node-was"]').innerText()).toContain(`was ${oldId}`);
    await screenshot(page, 'node-renumbered');
  });

  it('opened by the old id, names the node it is now', async () => {
    const { page } = await pages.open();
    await page.goto(`${hub.baseUrl}/nodes/${oldId}`);
    const notice = page.locator('[data-testid="node-renumbered"]');
    await expect.poll(() => notice.innerText()).toContain(node.node_id);
    await notice.locator('a').click();
    await expect.poll(() => page.locator('[data-testid="node-was"]').innerText()).toContain(`was ${oldId}`);
  });
});
