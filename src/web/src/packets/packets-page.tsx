/**
 * `/packets`: the packet log (`GET /api/v1/packets`), newest on top, with filters, older pages on
 * demand, a CSV of what the filters select, and new packets streamed in live
 * (`/api/v1/packets/stream`) until paused.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { request } from '../api/client.js';
import { LoadError, Loading } from '../components/load-states.js';
import { useTitle } from '../hooks.js';
import { formatDateTime, formatSeconds } from '../lib/format.js';
import { nextLink } from '../lib/link-header.js';
import { nodePath } from '../lib/routes.js';
import { ReconnectingStream, type StreamState } from '../live/event-stream.js';
import { Link } from '../router.js';
import {
  filterQuery,
  hopsWords,
  matchesFilters,
  NO_FILTERS,
  type PacketFilters,
  type PacketJson,
} from './packet-filters.js';
import './packets.css';
import { t } from '../i18n/index.js';

/** Rows the page keeps at most; older ones are a click (or the CSV) away. */
const MAX_SHOWN = 1_000;
const PAGE = 100;
const BROADCAST = '!ffffffff';

function NodeCell({ id }: { id: string }) {
  if (id === BROADCAST) return <span class="muted">{t('mesh.packets.everyone')}</span>;
  return <Link href={nodePath(id)}>{id}</Link>;
}

function PacketRow({ p }: { p: PacketJson }) {
  return (
    <tr
      data-testid="packet-row"
      data-packet-id={p.packet_id}
      class={p.duplicate ? 'packet-duplicate' : undefined}
    >
      <td class="nowrap" title={formatDateTime(Date.parse(p.time))}>
        {formatSeconds(Date.parse(p.time))}
      </td>
      <td>
        <NodeCell id={p.from} />
      </td>
      <td>
        <NodeCell id={p.to} />
      </td>
      <td class="packet-port" title={t('mesh.packets.portTitle', { port: p.portnum })}>
        {p.port}
      </td>
      <td>{p.channel}</td>
      <td class="nowrap">{hopsWords(p)}</td>
      <td>{p.snr ?? ''}</td>
      <td>{p.rssi ?? ''}</td>
      <td class="nowrap">{p.via === 'mqtt' ? `MQTT ${p.gateway ?? ''}` : t('mesh.packets.radio')}</td>
      <td>{p.payload_bytes} B</td>
      <td>{p.duplicate ? t('mesh.packets.repeatCell') : ''}</td>
    </tr>
  );
}

/** [value, label] pairs, in the order shown. */
type SelectOptions = readonly (readonly [value: string, label: string])[];

/** How an input of the filter form is bound to its draft (`field` below). */
interface FieldBinding {
  name: string;
  value: string;
  onInput: (e: Event) => void;
}

/** A filter with a fixed choice of `options`. */
function FilterSelect({
  label,
  options,
  ...binding
}: { label: string; options: SelectOptions } & FieldBinding) {
  return (
    <label>
      {label}
      <select {...binding}>
        {options.map(([option, text]) => (
          <option key={option} value={option}>
            {text}
          </option>
        ))}
      </select>
    </label>
  );
}

export function PacketsPage() {
  useTitle('Packets');
  const [draft, setDraft] = useState<PacketFilters>(NO_FILTERS);
  const [filters, setFilters] = useState<PacketFilters>(NO_FILTERS);
  const [rows, setRows] = useState<PacketJson[] | undefined>(undefined);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [paused, setPaused] = useState(false);
  const [waiting, setWaiting] = useState(0);
  const [stream, setStream] = useState<StreamState>('connecting');
  const live = useRef({ paused, filters });
  live.current = { paused, filters };
  const [reload, setReload] = useState(0);

  const query = filterQuery(filters);
  useEffect(() => {
    const abort = new AbortController();
    setError(undefined);
    const q = filterQuery(filters);
    q.set('limit', String(PAGE));
    request<{ data: PacketJson[] }>(`/api/v1/packets?${q}`, { signal: abort.signal })
      .then((res) => {
        setRows(res.body.data);
        setNext(nextLink(res.headers.get('link')));
        setWaiting(0);
      })
      .catch((e) => {
        if (!abort.signal.aborted) setError(e);
      });
    return () => abort.abort();
  }, [filters, reload]);

  useEffect(() => {
    const s = new ReconnectingStream({
      url: async () => '/api/v1/packets/stream',
      onState: setStream,
      // After a reconnection, fetch the page again: what came meanwhile was not streamed.
      onOpen: () => setReload((n) => n + 1),
      events: {
        packet: (data) => {
          const packet = data as PacketJson;
          if (!matchesFilters(packet, live.current.filters)) return;
          if (live.current.paused) setWaiting((n) => n + 1);
          else setRows((old) => (old ? [packet, ...old].slice(0, MAX_SHOWN) : old));
        },
      },
    });
    s.start();
    return () => s.stop();
  }, []);

  const older = async () => {
    if (!next) return;
    try {
      const res = await request<{ data: PacketJson[] }>(next);
      setRows((old) => [...(old ?? []), ...res.body.data]);
      setNext(nextLink(res.headers.get('link')));
    } catch (e) {
      setError(e);
    }
  };

  const field = (key: keyof PacketFilters): FieldBinding => ({
    name: key,
    value: draft[key],
    onInput: (e: Event) => setDraft({ ...draft, [key]: (e.currentTarget as HTMLInputElement).value }),
  });
  const viaOptions: SelectOptions = [
    ['', t('mesh.packets.viaAny')],
    ['radio', t('mesh.packets.viaRadio')],
    ['mqtt', 'MQTT'],
  ];
  const repeatOptions: SelectOptions = [
    ['', t('mesh.packets.repeatsShown')],
    ['false', t('mesh.packets.repeatsHidden')],
    ['true', t('mesh.packets.repeatsOnly')],
  ];

  return (
    <section class="packets-page">
      <div class="packets-head">
        <h1>{t('header.packets')}</h1>
        <p class="muted small" data-testid="packet-stream-state">
          {paused
            ? `${t('mesh.packets.paused')}${waiting ? ` · ${t('mesh.packets.newCount', { count: waiting })}` : ''}`
            : stream === 'open'
              ? t('mesh.packets.live')
              : t('mesh.packets.connecting')}
        </p>
        <button
          type="button"
          class="button button-secondary button-small"
          aria-pressed={paused}
          onClick={() => {
            if (paused) setReload((n) => n + 1);
            setPaused(!paused);
          }}
        >
          {paused ? t('mesh.packets.resume') : t('mesh.packets.pause')}
        </button>
        <a
          class="button button-secondary button-small"
          href={`/api/v1/packets?${query}${query.size ? '&' : ''}format=csv&limit=10000`}
          download
        >
          CSV
        </a>
      </div>
      <form
        class="panel packet-filters"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
        }}
      >
        <label>
          {t('mesh.packets.node')}
          <input placeholder="!a1b2c3d4" {...field('node')} />
        </label>
        <label>
          {t('mesh.packets.port')}
          <input placeholder={t('mesh.packets.portPlaceholder')} {...field('port')} />
        </label>
        <FilterSelect label={t('mesh.packets.heardBy')} options={viaOptions} {...field('via')} />
        <label>
          {t('mesh.packets.gateway')}
          <input placeholder="!0000beef" {...field('gateway')} />
        </label>
        <FilterSelect label={t('mesh.packets.repeats')} options={repeatOptions} {...field('duplicate')} />
        <button type="submit" class="button button-small">
          {t('mesh.packets.apply')}
        </button>
      </form>
      {error !== undefined && <LoadError error={error} onRetry={() => setReload((n) => n + 1)} small />}
      {rows === undefined ? (
        error === undefined && <Loading>{t('mesh.packets.loading')}</Loading>
      ) : rows.length === 0 ? (
        <p class="panel notice" data-testid="packets-empty">
          {t(query.size ? 'mesh.packets.noneMatch' : 'mesh.packets.noneYet')}
        </p>
      ) : (
        <div class="panel packets-table-wrap">
          <table class="packets-table" data-testid="packets-table">
            <caption class="visually-hidden">{t('mesh.packets.caption')}</caption>
            <thead>
              <tr>
                {[
                  t('mesh.packets.time'),
                  t('mesh.from'),
                  t('mesh.to'),
                  t('mesh.packets.port'),
                  t('mesh.packets.channel'),
                  t('mesh.packets.hops'),
                  'SNR',
                  'RSSI',
                  t('mesh.packets.heardBy'),
                  t('mesh.packets.size'),
                  t('mesh.packets.repeat'),
                ].map((c) => (
                  <th key={c} scope="col">
                    {c}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <PacketRow key={p.id} p={p} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {next && rows && rows.length < MAX_SHOWN && (
        <button type="button" class="button button-secondary button-small" onClick={older}>
          {t('mesh.packets.older')}
        </button>
      )}
    </section>
  );
}
