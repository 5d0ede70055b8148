/**
 * `/notifications`: "Enable notifications" for every signed-in user (admins hear rule firings,
 * subscribers their replies and failed texts); for admins also the rules (add, switch off,
 * delete) and the recent firings, new ones arriving live over the dashboard's stream.
 */
import { useEffect, useState } from 'preact/hooks';
import type { RuleJson, RuleKind } from '../../../notifications/schemas.js';
import { request } from '../api/client.js';
import { SignIn } from '../chat/sign-in.js';
import { useStore, useTitle } from '../hooks.js';
import { formatDateTime } from '../lib/format.js';
import { tokenRoles } from '../lib/jwt.js';
import { plainWords } from '../lib/problem.js';
import { sessionStore } from '../state/session.js';
import { type FiringJson, liveFiringsStore } from './live-firings.js';
import { currentSubscription, disablePush, enablePush, pushSupport } from './push.js';
import './notifications.css';
import { t } from '../i18n/index.js';

const KINDS: Record<RuleKind, { fields: Array<'minutes' | 'threshold' | 'metric' | 'min' | 'max'> }> = {
  node_offline: { fields: ['minutes'] },
  node_online: { fields: ['minutes'] },
  battery_low: { fields: ['threshold'] },
  battery_falling: { fields: ['threshold', 'minutes'] },
  rebooted: { fields: [] },
  new_node: { fields: [] },
  reading_out_of_range: { fields: ['metric', 'min', 'max'] },
  link_lost: { fields: ['minutes'] },
};
const kindLabel = (kind: RuleKind) => t(`mesh.alerts.kind.${kind}`);
const METRICS = [
  'temperature_c',
  'humidity_percent',
  'pressure_pa',
  'wind_speed_ms',
  'pm25_ugm3',
  'pm10_ugm3',
];

function condition(r: RuleJson): string {
  const parts: string[] = [];
  if (r.metric) parts.push(r.metric);
  if (r.min !== undefined) parts.push(`≥ ${r.min}`);
  if (r.max !== undefined) parts.push(`≤ ${r.max}`);
  if (r.threshold !== undefined) parts.push(`${r.threshold} %`);
  if (r.minutes !== undefined) parts.push(`${r.minutes} min`);
  return parts.join(' ');
}

function PushControl({ token }: { token: string }) {
  const support = pushSupport();
  const [on, setOn] = useState<boolean>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  useEffect(() => {
    if (support === 'supported')
      void currentSubscription().then(
        (s) => setOn(!!s),
        () => setOn(false),
      );
  }, []);
  if (support !== 'supported')
    return (
      <p class="muted" data-testid="push-unsupported">
        {t(support === 'insecure' ? 'mesh.alerts.insecure' : 'mesh.alerts.unsupported')}
      </p>
    );
  const toggle = async () => {
    setBusy(true);
    setError(undefined);
    try {
      if (on) await disablePush(token);
      else await enablePush(token);
      setOn(!on);
    } catch (e) {
      setError(e instanceof Error && !('status' in e) ? e.message : plainWords(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="push-control">
      <button type="button" class="button" disabled={busy || on === undefined} onClick={toggle}>
        {t(on ? 'mesh.alerts.turnOff' : 'mesh.alerts.enable')}
      </button>
      {error && (
        <p class="notice-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

function RuleForm({ token, onAdded }: { token: string; onAdded: () => void }) {
  const [kind, setKind] = useState<RuleKind>('node_offline');
  const [error, setError] = useState<string>();
  const fields = KINDS[kind].fields;
  const submit = async (event: Event) => {
    event.preventDefault();
    const element = event.currentTarget as HTMLFormElement;
    const form = new FormData(element);
    const body: Record<string, unknown> = { name: String(form.get('name') ?? ''), kind };
    const nodes = String(form.get('nodes') ?? '')
      .split(/[\s,]+/)
      .filter(Boolean);
    if (nodes.length) body.nodes = nodes;
    for (const f of fields) {
      const v = String(form.get(f) ?? '').trim();
      if (v !== '') body[f] = f === 'metric' ? v : Number(v);
    }
    try {
      await request('/api/v1/notifications/rules', { method: 'POST', token, body });
      element.reset();
      setError(undefined);
      onAdded();
    } catch (e) {
      setError(plainWords(e));
    }
  };
  return (
    <form class="rule-form" onSubmit={submit} aria-labelledby="new-rule">
      <h3 id="new-rule">{t('mesh.alerts.newRule')}</h3>
      <label>
        {t('mesh.alerts.name')} <input name="name" required maxLength={100} />
      </label>
      <label>
        {t('mesh.alerts.when')}
        <select
          name="kind"
          value={kind}
          onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value as RuleKind)}
        >
          {(Object.keys(KINDS) as RuleKind[]).map((k) => (
            <option value={k} key={k}>
              {kindLabel(k)}
            </option>
          ))}
        </select>
      </label>
      {fields.includes('metric') && (
        <label>
          {t('mesh.alerts.metric')}
          <select name="metric">
            {METRICS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
      )}
      {fields.includes('minutes') && (
        <label>
          {t('mesh.alerts.minutes')} <input name="minutes" type="number" min={1} max={10080} required />
        </label>
      )}
      {fields.includes('threshold') && (
        <label>
          {t(kind === 'battery_low' ? 'mesh.alerts.below' : 'mesh.alerts.points')}{' '}
          <input name="threshold" type="number" min={0} max={100} required />
        </label>
      )}
      {fields.includes('min') && (
        <label>
          {t('mesh.alerts.min')} <input name="min" type="number" step="any" />
        </label>
      )}
      {fields.includes('max') && (
        <label>
          {t('mesh.alerts.max')} <input name="max" type="number" step="any" />
        </label>
      )}
      <label>
        {t('mesh.nodes')} <input name="nodes" placeholder={t('mesh.alerts.nodesPlaceholder')} />
      </label>
      <button type="submit" class="button">
        {t('mesh.alerts.addRule')}
      </button>
      {error && (
        <p class="notice-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

function AdminView({ token }: { token: string }) {
  const [rules, setRules] = useState<RuleJson[]>();
  const [stored, setStored] = useState<FiringJson[]>([]);
  const [error, setError] = useState<string>();
  const live = useStore(liveFiringsStore).firings;
  const load = async () => {
    try {
      const [r, f] = await Promise.all([
        request<{ data: RuleJson[] }>('/api/v1/notifications/rules', { token }),
        request<{ data: FiringJson[] }>('/api/v1/notifications/firings?limit=50', { token }),
      ]);
      setRules(r.body.data);
      setStored(f.body.data);
      setError(undefined);
    } catch (e) {
      setError(plainWords(e));
    }
  };
  useEffect(() => {
    void load();
  }, [token]);
  const change = async (rule: RuleJson, method: 'PATCH' | 'DELETE') => {
    try {
      await request(`/api/v1/notifications/rules/${rule.id}`, {
        method,
        token,
        ...(method === 'PATCH' ? { body: { enabled: !rule.enabled } } : {}),
      });
      await load();
    } catch (e) {
      setError(plainWords(e));
    }
  };
  const seen = new Set(live.map((f) => f.id));
  const firings = [...live, ...stored.filter((f) => !seen.has(f.id))];
  const names = new Map(rules?.map((r) => [r.id, r.name]));
  return (
    <>
      {error && (
        <p class="notice-error" role="alert">
          {error}
        </p>
      )}
      <section class="panel" aria-labelledby="rules-heading">
        <h2 id="rules-heading">{t('mesh.alerts.rules')}</h2>
        {rules?.length === 0 && <p class="muted">{t('mesh.alerts.noRules')}</p>}
        {rules && rules.length > 0 && (
          <ul class="rule-list" data-testid="rules">
            {rules.map((r) => (
              <li key={r.id} class={r.enabled ? '' : 'muted'}>
                <strong>{r.name}</strong> <span class="muted">{kindLabel(r.kind)}</span> {condition(r)}
                {r.nodes.length > 0 && <span class="muted"> · {r.nodes.join(', ')}</span>}
                <span class="rule-actions">
                  <button type="button" class="link-button" onClick={() => change(r, 'PATCH')}>
                    {r.enabled ? t('mesh.packets.pause') : t('mesh.packets.resume')}
                  </button>
                  <button
                    type="button"
                    class="link-button"
                    onClick={() => change(r, 'DELETE')}
                    aria-label={t('mesh.alerts.deleteNamed', { name: r.name })}
                  >
                    {t('mesh.alerts.delete')}
                  </button>
                </span>
              </li>
            ))}
          </ul>
        )}
        <RuleForm token={token} onAdded={load} />
      </section>
      <section class="panel" aria-labelledby="firings-heading">
        <h2 id="firings-heading">{t('mesh.alerts.firings')}</h2>
        {firings.length === 0 ? (
          <p class="muted">{t('mesh.alerts.noFirings')}</p>
        ) : (
          <ol class="firing-list" data-testid="firings" aria-live="polite">
            {firings.map((f) => (
              <li key={f.id}>
                <time dateTime={f.at}>{formatDateTime(Date.parse(f.at))}</time>{' '}
                {f.rule_id !== null && names.get(f.rule_id) && <strong>{names.get(f.rule_id)}: </strong>}
                {f.message}
                {f.quiet && <span class="muted"> {t('mesh.alerts.quiet')}</span>}
              </li>
            ))}
          </ol>
        )}
      </section>
    </>
  );
}

export function NotificationsPage() {
  useTitle(t('mesh.alerts.title'));
  const { session, notice } = useStore(sessionStore);
  if (!session)
    return (
      <SignIn notice={notice} heading={t('mesh.alerts.signInHeading')} intro={t('mesh.alerts.signInIntro')} />
    );
  const admin = tokenRoles(session.token).includes('admin');
  return (
    <div class="notifications-page">
      <section class="panel" aria-labelledby="notifications-heading">
        <h1 id="notifications-heading">{t('mesh.alerts.title')}</h1>
        <p>{t(admin ? 'mesh.alerts.adminIntro' : 'mesh.alerts.userIntro')}</p>
        <PushControl token={session.token} />
      </section>
      {admin && <AdminView token={session.token} />}
    </div>
  );
}
