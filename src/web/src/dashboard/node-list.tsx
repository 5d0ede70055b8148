/** Every node beside the map, and below it those with no position, which the map cannot show. */

import { t } from '../i18n/index.js';
import { type Freshness, freshnessLabel } from '../lib/freshness.js';
import { batteryLabel, heardByWords, type NodeView, wasWords } from '../lib/node-view.js';
import { nodePath } from '../lib/routes.js';
import { Link } from '../router.js';

export function FreshnessDot({ freshness }: { freshness: Freshness }) {
  return (
    <span class={`fresh-dot fresh-${freshness}`} title={freshnessLabel(freshness)}>
      <span class="visually-hidden">{freshnessLabel(freshness)}</span>
    </span>
  );
}

function PinIcon() {
  return (
    <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true">
      <path
        d="M12 2a7 7 0 0 0-7 7c0 5 7 13 7 13s7-8 7-13a7 7 0 0 0-7-7Zm0 9.5A2.5 2.5 0 1 1 12 6.5a2.5 2.5 0 0 1 0 5Z"
        fill="currentColor"
      />
    </svg>
  );
}

/** Readings whose unit alone does not say what they are (two particle sizes share µg/m³). */
const NAMED_IN_SUMMARY = new Set(['pm25_ugm3', 'pm10_ugm3']);

function NodeItem({ node, onShow, site }: { node: NodeView; onShow?: (id: string) => void; site?: string }) {
  const summary = node.readings
    .slice(0, 3)
    .map((r) => (NAMED_IN_SUMMARY.has(r.key) ? `${r.label} ${r.value}` : r.value))
    .join(' · ');
  return (
    <li
      class="node-item"
      data-node-id={node.id}
      data-reading-at={node.readingAt}
      data-freshness={node.freshness}
      data-sensor={node.sensor ? 'true' : undefined}
    >
      <FreshnessDot freshness={node.freshness} />
      <div class="node-item-main">
        <div class="node-item-title">
          <Link href={nodePath(node.id, site)} class="node-name">
            {node.name}
          </Link>
          <span class="chip">{node.shortName}</span>
          {node.isHub && <span class="chip chip-hub">{t('mesh.thisHub')}</span>}
          {node.sensor && (
            <span class="chip chip-sensor" title={t('mesh.sensorTitle')}>
              {t('mesh.sensor')}
            </span>
          )}
        </div>
        <div class="node-meta">
          {node.heard}
          {node.battery !== undefined && ` · ${t('mesh.battery', { level: batteryLabel(node.battery) })}`}
          {node.previousIds && (
            <span data-testid="node-was" title={t('mesh.renumberedTitle')}>
              {' · '}
              {wasWords(node.previousIds)}
            </span>
          )}
        </div>
        {node.sites && (
          <div class="node-sites" data-testid="node-sites">
            {heardByWords(node.sites)}
          </div>
        )}
        {summary && <div class="node-summary">{summary}</div>}
      </div>
      {onShow && (
        <button
          type="button"
          class="icon-button"
          aria-label={t('mesh.showNamedOnMap', { name: node.name })}
          title={t('mesh.showOnMap')}
          onClick={() => onShow(node.id)}
        >
          <PinIcon />
        </button>
      )}
    </li>
  );
}

export function Legend() {
  const steps: Freshness[] = ['live', 'recent', 'stale', 'silent'];
  const short: Record<Freshness, string> = {
    live: '≤ 15 min',
    recent: '≤ 2 h',
    stale: '≤ 24 h',
    silent: t('mesh.older'),
  };
  return (
    <ul class="legend" aria-label={t('mesh.legendLabel')}>
      {steps.map((f) => (
        <li key={f}>
          <span class={`fresh-dot fresh-${f}`} aria-hidden="true" /> {short[f]}
        </li>
      ))}
    </ul>
  );
}

export function NodeList({
  nodes,
  onShow,
  site,
}: {
  nodes: readonly NodeView[];
  onShow: (id: string) => void;
  /** The upstream's site filter: the node pages open on that site's history. */
  site?: string | undefined;
}) {
  const placed = nodes.filter((n) => n.position);
  const unplaced = nodes.filter((n) => !n.position);
  return (
    <>
      <ul class="node-list" aria-label={t('mesh.nodesOnMap')}>
        {placed.map((node) => (
          <NodeItem key={node.id} node={node} onShow={onShow} site={site} />
        ))}
      </ul>
      {unplaced.length > 0 && (
        <section class="unplaced" aria-labelledby="unplaced-heading" data-testid="unplaced-nodes">
          <h3 id="unplaced-heading">{t('mesh.notOnMap')}</h3>
          <p class="muted small">{t('mesh.notOnMapText')}</p>
          <ul class="node-list">
            {unplaced.map((node) => (
              <NodeItem key={node.id} node={node} site={site} />
            ))}
          </ul>
        </section>
      )}
    </>
  );
}
