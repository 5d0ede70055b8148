/**
 * The node page's traceroutes and neighbours: a "Traceroute" button for a signed-in admin or
 * operator (the hub sends one per 30 s and says so), the latest results with each hop and its SNR
 * (and a link that draws the path on the map), and the nodes this one hears or is heard by.
 */
import { useEffect, useState } from 'preact/hooks';
import { useNow, useStore } from '../hooks.js';
import { type MessageKey, t } from '../i18n/index.js';
import { formatAge } from '../lib/format.js';
import { displayName } from '../lib/mesh-state.js';
import { plainWords } from '../lib/problem.js';
import { nodePath } from '../lib/routes.js';
import { Link } from '../router.js';
import { meshStore } from '../state/mesh.js';
import {
  getTraceroute,
  type LinkJson,
  listTraceroutes,
  sendTraceroute,
  snrClass,
  snrText,
  type TracerouteJson,
  traceroutePath,
  useCanTrace,
  useLinks,
  useLoaded,
} from './topology.js';
import './topology.css';

const STATUS_WORDS: Record<TracerouteJson['status'], MessageKey> = {
  pending: 'mesh.trace.pending',
  answered: 'mesh.trace.answered',
  no_answer: 'mesh.trace.noAnswer',
  refused: 'mesh.trace.refused',
};

/** How often a pending traceroute is asked for again. */
const POLL_MS = 2_000;
const NO_TRACES: TracerouteJson[] = [];

function SnrChip({ snr }: { snr: number | undefined }) {
  return <span class={`snr-chip snr-${snrClass(snr)}`}>{snrText(snr)}</span>;
}

function Path({ start, hops, label }: { start: string; hops: TracerouteJson['route']; label: string }) {
  const names = useStore(meshStore).mesh.nodes;
  return (
    <p class="trace-path" data-path={label}>
      <span class="muted">{label}: </span>
      {displayName(names.get(start), start)}
      {hops.map((hop, index) => (
        <span key={`${hop.node_id}-${index}`} data-hop={hop.node_id}>
          {' → '}
          <SnrChip snr={hop.snr} /> {displayName(names.get(hop.node_id), hop.node_id)}
        </span>
      ))}
    </p>
  );
}

function TraceResult({ trace, now }: { trace: TracerouteJson; now: number }) {
  return (
    <li data-testid="traceroute" data-status={trace.status}>
      <strong>{t(STATUS_WORDS[trace.status])}</strong>{' '}
      <span class="muted small">
        {formatAge(Date.parse(trace.requested_at), now)}
        {trace.source === 'heard' ? ` · ${t('mesh.trace.heardAskedBy', { id: trace.origin_id })}` : ''}
      </span>
      {trace.status === 'answered' && (
        <>
          <Path start={trace.origin_id} hops={trace.route} label={t('mesh.trace.out')} />
          {trace.route_back.length > 0 && (
            <Path start={trace.node_id} hops={trace.route_back} label={t('mesh.trace.back')} />
          )}
          <Link href={traceroutePath(trace)} class="small">
            {t('mesh.showOnMap')}
          </Link>
        </>
      )}
      {trace.error && trace.status !== 'answered' && <p class="muted small">{trace.error}</p>}
    </li>
  );
}

function Neighbour({ nodeId, link, now }: { nodeId: string; link: LinkJson; now: number }) {
  const names = useStore(meshStore).mesh.nodes;
  const other = link.from === nodeId ? link.to : link.from;
  const words = t(link.from === nodeId ? 'mesh.trace.hears' : 'mesh.trace.heardBy');
  return (
    <li data-testid="neighbour" data-node-id={other}>
      <span class="muted">{words}</span>{' '}
      <Link href={nodePath(other)}>{displayName(names.get(other), other)}</Link> <SnrChip snr={link.snr} />{' '}
      <span class="muted small">
        {t(link.source === 'neighborinfo' ? 'mesh.trace.neighbourInfo' : 'mesh.trace.traceroute')} ·{' '}
        {formatAge(Date.parse(link.last_heard), now)}
      </span>
    </li>
  );
}

export function TopologyPanel({ nodeId, isHub }: { nodeId: string; isHub: boolean }) {
  const token = useCanTrace();
  const now = useNow(30_000);
  const links = useLinks(nodeId);
  const [traces, setTraces] = useLoaded<TracerouteJson[]>(nodeId, listTraceroutes, NO_TRACES);
  const [error, setError] = useState<string | undefined>(undefined);
  const [sending, setSending] = useState(false);

  const pending = traces.find((tr) => tr.status === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => {
      getTraceroute(pending.id)
        .then((fresh) => setTraces((list) => list.map((tr) => (tr.id === fresh.id ? fresh : tr))))
        .catch(() => {});
    }, POLL_MS);
    return () => clearTimeout(timer);
  }, [pending, traces]);

  const trace = async () => {
    if (!token) return;
    setSending(true);
    setError(undefined);
    try {
      const created = await sendTraceroute(nodeId, token);
      setTraces((list) => [created, ...list.filter((tr) => tr.id !== created.id)]);
    } catch (failure) {
      setError(plainWords(failure));
    } finally {
      setSending(false);
    }
  };

  return (
    <section class="panel" aria-labelledby="topology-heading" data-testid="topology-panel">
      <h2 id="topology-heading">{t('mesh.trace.heading')}</h2>
      {token && !isHub && (
        <div class="trace-actions">
          <button
            type="button"
            class="button button-small"
            disabled={sending || !!pending}
            onClick={() => void trace()}
          >
            {t('mesh.trace.button')}
          </button>
          <span class="muted small">{t('mesh.trace.pace')}</span>
        </div>
      )}
      {error && (
        <p class="notice-error" role="alert">
          {error}
        </p>
      )}
      {traces.length === 0 ? (
        <p class="muted">{t('mesh.trace.none')}</p>
      ) : (
        <ul class="trace-list">
          {traces.map((tr) => (
            <TraceResult key={tr.id} trace={tr} now={now} />
          ))}
        </ul>
      )}
      <h3>{t('mesh.trace.neighbours')}</h3>
      {links.length === 0 ? (
        <p class="muted">{t('mesh.trace.noNeighbours')}</p>
      ) : (
        <ul class="neighbour-list">
          {links.map((link) => (
            <Neighbour key={`${link.from}-${link.to}-${link.source}`} nodeId={nodeId} link={link} now={now} />
          ))}
        </ul>
      )}
    </section>
  );
}
