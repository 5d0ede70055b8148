/**
 * The node page's traceroutes and neighbours: a "Traceroute" button for a signed-in admin or
 * operator (the hub sends one per 30 s and says so), the latest results with each hop and its SNR
 * (and a link that draws the path on the map), and the nodes this one hears or is heard by.
 */
import { useEffect, useState } from 'preact/hooks';
import { useNow, useStore } from '../hooks.js';
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

const STATUS_WORDS: Record<TracerouteJson['status'], string> = {
  pending: 'Waiting for the answer…',
  answered: 'Answered',
  no_answer: 'No answer',
  refused: 'Refused by the radio (too soon after the last one)',
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
      <strong>{STATUS_WORDS[trace.status]}</strong>{' '}
      <span class="muted small">
        {formatAge(Date.parse(trace.requested_at), now)}
        {trace.source === 'heard' ? ` · heard, asked by ${trace.origin_id}` : ''}
      </span>
      {trace.status === 'answered' && (
        <>
          <Path start={trace.origin_id} hops={trace.route} label="Out" />
          {trace.route_back.length > 0 && <Path start={trace.node_id} hops={trace.route_back} label="Back" />}
          <Link href={traceroutePath(trace)} class="small">
            Show on map
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
  const words = link.from === nodeId ? 'hears' : 'is heard by';
  return (
    <li data-testid="neighbour" data-node-id={other}>
      <span class="muted">{words}</span>{' '}
      <Link href={nodePath(other)}>{displayName(names.get(other), other)}</Link> <SnrChip snr={link.snr} />{' '}
      <span class="muted small">
        {link.source === 'neighborinfo' ? 'neighbour info' : 'traceroute'} ·{' '}
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

  const pending = traces.find((t) => t.status === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => {
      getTraceroute(pending.id)
        .then((fresh) => setTraces((list) => list.map((t) => (t.id === fresh.id ? fresh : t))))
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
      setTraces((list) => [created, ...list.filter((t) => t.id !== created.id)]);
    } catch (failure) {
      setError(plainWords(failure));
    } finally {
      setSending(false);
    }
  };

  return (
    <section class="panel" aria-labelledby="topology-heading" data-testid="topology-panel">
      <h2 id="topology-heading">Traceroute and neighbours</h2>
      {token && !isHub && (
        <div class="trace-actions">
          <button
            type="button"
            class="button button-small"
            disabled={sending || !!pending}
            onClick={() => void trace()}
          >
            Traceroute
          </button>
          <span class="muted small">The radio sends at most one traceroute every 30 seconds.</span>
        </div>
      )}
      {error && (
        <p class="notice-error" role="alert">
          {error}
        </p>
      )}
      {traces.length === 0 ? (
        <p class="muted">No traceroute to this node yet.</p>
      ) : (
        <ul class="trace-list">
          {traces.map((t) => (
            <TraceResult key={t.id} trace={t} now={now} />
          ))}
        </ul>
      )}
      <h3>Neighbours</h3>
      {links.length === 0 ? (
        <p class="muted">
          No neighbour heard yet (nodes report them with neighbour info, or a traceroute shows them).
        </p>
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
