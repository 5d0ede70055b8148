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
import { tokenRoles } from '../lib/jwt.js';
import { plainWords } from '../lib/problem.js';
import { sessionStore } from '../state/session.js';
import { type FiringJson, liveFiringsStore } from './live-firings.js';
import { currentSubscription, disablePush, enablePush, pushSupport } from './push.js';
import './notifications.css';

const KINDS: Record<
  RuleKind,
  { label: string; fields: Array<'minutes' | 'threshold' | 'metric' | 'min' | 'max'> }
> = {
  node_offline: { label: 'Node offline for N minutes', fields: ['minutes'] },
  node_online: { label: 'Node back after N minutes away', fields: ['minutes'] },
  battery_low: { label: 'Battery below X %', fields: ['threshold'] },
  battery_falling: { label: 'Battery falling X points in N minutes', fields: ['threshold', 'minutes'] },
  rebooted: { label: 'Node rebooted', fields: [] },
  new_node: { label: 'New node heard', fields: [] },
  reading_out_of_range: { label: 'Reading outside a range', fields: ['metric', 'min', 'max'] },
  link_lost: { label: 'Link not heard for N minutes', fields: ['minutes'] },
};
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
        {support === 'insecure'
          ? 'Browsers allow notifications only over HTTPS (or on localhost). Firings still show below while this page is open.'
          : 'This browser cannot show notifications. Firings still show below while this page is open.'}
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
        {on ? 'Turn off notifications' : 'Enable notifications'}
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
      <h3 id="new-rule">New rule</h3>
      <label>
        Name <input name="name" required maxLength={100} />
      </label>
      <label>
        When
        <select
          name="kind"
          value={kind}
          onChange={(e) => setKind((e.currentTarget as HTMLSelectElement).value as RuleKind)}
        >
          {(Object.keys(KINDS) as RuleKind[]).map((k) => (
            <option value={k} key={k}>
              {KINDS[k].label}
            </option>
          ))}
        </select>
      </label>
      {fields.includes('metric') && (
        <label>
          Metric
          <select name="metric">
            {METRICS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
      )}
      {fields.includes('minutes') && (
        <label>
          Minutes <input name="minutes" type="number" min={1} max={10080} required />
        </label>
      )}
      {fields.includes('threshold') && (
        <label>
          {kind === 'battery_low' ? 'Below %' : 'Points'}{' '}
          <input name="threshold" type="number" min={0} max={100} required />
        </label>
      )}
      {fields.includes('min') && (
        <label>
          Min <input name="min" type="number" step="any" />
        </label>
      )}
      {fields.includes('max') && (
        <label>
          Max <input name="max" type="number" step="any" />
        </label>
      )}
      <label>
        Nodes <input name="nodes" placeholder="all, or !a1b2c3d4, …" />
      </label>
      <button type="submit" class="button">
        Add rule
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
        <h2 id="rules-heading">Rules</h2>
        {rules?.length === 0 && <p class="muted">No rules yet.</p>}
        {rules && rules.length > 0 && (
          <ul class="rule-list" data-testid="rules">
            {rules.map((r) => (
              <li key={r.id} class={r.enabled ? '' : 'muted'}>
                <strong>{r.name}</strong> <span class="muted">{KINDS[r.kind].label}</span> {condition(r)}
                {r.nodes.length > 0 && <span class="muted"> · {r.nodes.join(', ')}</span>}
                <span class="rule-actions">
                  <button type="button" class="link-button" onClick={() => change(r, 'PATCH')}>
                    {r.enabled ? 'Pause' : 'Resume'}
                  </button>
                  <button
                    type="button"
                    class="link-button"
                    onClick={() => change(r, 'DELETE')}
                    aria-label={`Delete ${r.name}`}
                  >
                    Delete
                  </button>
                </span>
              </li>
            ))}
          </ul>
        )}
        <RuleForm token={token} onAdded={load} />
      </section>
      <section class="panel" aria-labelledby="firings-heading">
        <h2 id="firings-heading">Recent firings</h2>
        {firings.length === 0 ? (
          <p class="muted">Nothing has fired yet.</p>
        ) : (
          <ol class="firing-list" data-testid="firings" aria-live="polite">
            {firings.map((f) => (
              <li key={f.id}>
                <time dateTime={f.at}>{new Date(f.at).toLocaleString()}</time>{' '}
                {f.rule_id !== null && names.get(f.rule_id) && <strong>{names.get(f.rule_id)}: </strong>}
                {f.message}
                {f.quiet && <span class="muted"> (quiet hours: not sent)</span>}
              </li>
            ))}
          </ol>
        )}
      </section>
    </>
  );
}

export function NotificationsPage() {
  useTitle('Notifications');
  const { session, notice } = useStore(sessionStore);
  if (!session)
    return (
      <SignIn
        notice={notice}
        heading="Sign in for notifications"
        intro="Administrators are told when a rule fires; subscribers when a reply arrives or a text fails, even with this page closed."
      />
    );
  const admin = tokenRoles(session.token).includes('admin');
  return (
    <div class="notifications-page">
      <section class="panel" aria-labelledby="notifications-heading">
        <h1 id="notifications-heading">Notifications</h1>
        <p>
          {admin
            ? 'This browser can show each firing of the rules below, even with the page closed.'
            : 'This browser can tell you when a reply arrives or a text fails, even with the page closed.'}
        </p>
        <PushControl token={session.token} />
      </section>
      {admin && <AdminView token={session.token} />}
    </div>
  );
}
