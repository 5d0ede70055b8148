/**
 * The alert rule form (issue 15 "Alerts and rules": a form that cannot produce an invalid
 * condition). Choices are controls that offer only what the hub accepts — services, results,
 * days, severities and time zones as lists, times from time pickers, a window as a number and a
 * unit — and the few things typed (name, values, count, window) are checked against the hub's
 * limits before anything is sent (rule-draft.ts). The hub's 400 and 409 field errors are shown
 * beside their fields all the same.
 */
import { useMemo, useRef, useState } from 'preact/hooks';
import { auditJson, auditWords, fieldError } from './audit-api.js';
import type { AlertRule } from './audit-types.js';
import {
  DAY_NAMES,
  DAYS,
  draftProblems,
  LIMITS,
  RESULTS,
  type RuleDraft,
  ruleBody,
  SEVERITIES,
  type TextMatchDraft,
  WINDOW_UNITS,
  type WindowUnit,
} from './rule-draft.js';
import { TagInput } from './tag-input.js';

const UNIT_WORDS: Record<WindowUnit, string> = { s: 'seconds', m: 'minutes', h: 'hours', d: 'days' };

function timeZones(): string[] {
  try {
    return ['UTC', ...Intl.supportedValuesOf('timeZone').filter((z) => z !== 'UTC')];
  } catch {
    return ['UTC'];
  }
}

export function RuleForm({
  initial,
  ruleId,
  services,
  serviceLabel,
  hubTimeZone,
  onSaved,
  onCancel,
}: {
  initial: RuleDraft;
  /** Editing this rule (PUT); else a new one (POST). */
  ruleId?: string | undefined;
  services: readonly string[];
  serviceLabel: (service: string) => string;
  /** ALERT_TIME_ZONE, when the hub says. */
  hubTimeZone: string | undefined;
  onSaved: (rule: AlertRule) => void;
  onCancel: () => void;
}) {
  const [d, setDraft] = useState<RuleDraft>(initial);
  const [tried, setTried] = useState(false);
  const [sending, setSending] = useState(false);
  const [serverError, setServerError] = useState<unknown>();
  const form = useRef<HTMLFormElement>(null);
  const zones = useMemo(timeZones, []);
  const set = (patch: Partial<RuleDraft>) => {
    setDraft((prev) => ({ ...prev, ...patch }));
    // The hub's word was about what was sent; a change makes it stale.
    setServerError(undefined);
  };
  const problems = draftProblems(d);
  /** The hub's word on a field wins; the form's own shows live, the name's after a first try. */
  const err = (field: string): string | undefined =>
    fieldError(serverError, field) ?? (field !== 'name' || tried ? problems[field] : undefined);
  const described = (id: string, message: string | undefined) =>
    message ? { 'aria-invalid': 'true' as const, 'aria-describedby': `${id}-error` } : {};
  const choices = [...new Set([...services, ...d.services])];
  const unmapped =
    serverError !== undefined &&
    !['name', 'description', 'severity', 'enabled', 'condition'].some((f) => fieldError(serverError, f));

  const submit = (e: Event) => {
    e.preventDefault();
    setTried(true);
    if (Object.keys(problems).length) {
      form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
      return;
    }
    setSending(true);
    setServerError(undefined);
    auditJson<AlertRule>(ruleId ? `/api/rules/${encodeURIComponent(ruleId)}` : '/api/rules', {
      method: ruleId ? 'PUT' : 'POST',
      body: ruleBody(d),
    }).then(
      (rule) => {
        setSending(false);
        onSaved(rule);
      },
      (error: unknown) => {
        setSending(false);
        setServerError(error);
      },
    );
  };

  return (
    <form ref={form} class="panel rule-form" aria-labelledby="rule-form-title" onSubmit={submit} noValidate>
      <h2 id="rule-form-title">{ruleId ? `Edit “${initial.name}”` : 'New rule'}</h2>
      <div class="rule-grid">
        <div class="audit-field rule-field">
          <label for="r-name">Name</label>
          <input
            id="r-name"
            type="text"
            value={d.name}
            maxLength={LIMITS.name}
            required
            onInput={(e) => set({ name: e.currentTarget.value })}
            {...described('r-name', err('name'))}
          />
          <FieldError id="r-name" message={err('name')} />
        </div>
        <div class="audit-field rule-field">
          <label for="r-severity">Severity</label>
          <select
            id="r-severity"
            value={d.severity}
            onChange={(e) => set({ severity: e.currentTarget.value as RuleDraft['severity'] })}
          >
            {SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="audit-field rule-field rule-wide">
          <label for="r-description">Description (optional)</label>
          <textarea
            id="r-description"
            rows={2}
            value={d.description}
            maxLength={LIMITS.description}
            onInput={(e) => set({ description: e.currentTarget.value })}
            {...described('r-description', err('description'))}
          />
          <FieldError id="r-description" message={err('description')} />
        </div>
        <label class="check rule-wide">
          <input
            type="checkbox"
            checked={d.enabled}
            onChange={(e) => set({ enabled: e.currentTarget.checked })}
          />{' '}
          On (evaluated for new events)
        </label>
      </div>

      <fieldset class="rule-part">
        <legend>Which events (every part you fill in must match; none: every event)</legend>
        <fieldset class="rule-checks" {...described('r-services', err('condition.services'))}>
          <legend>Services (none: any)</legend>
          {choices.map((s) => (
            <label key={s} class="check">
              <input
                type="checkbox"
                checked={d.services.includes(s)}
                onChange={(e) =>
                  set({
                    services: e.currentTarget.checked
                      ? [...d.services, s]
                      : d.services.filter((x) => x !== s),
                  })
                }
              />{' '}
              {serviceLabel(s)}
            </label>
          ))}
          <FieldError id="r-services" message={err('condition.services')} />
        </fieldset>
        <TextMatch
          id="r-operation"
          label="Operation"
          value={d.operation}
          onChange={(operation) => set({ operation })}
          error={err('condition.operation')}
        />
        <TextMatch
          id="r-actor"
          label="Actor"
          value={d.actor}
          onChange={(actor) => set({ actor })}
          error={err('condition.actor')}
        />
        <fieldset class="rule-checks">
          <legend>Result (none: any)</legend>
          {RESULTS.map((r) => (
            <label key={r} class="check">
              <input
                type="checkbox"
                checked={d.results.includes(r)}
                onChange={(e) =>
                  set({
                    results: e.currentTarget.checked ? [...d.results, r] : d.results.filter((x) => x !== r),
                  })
                }
              />{' '}
              {r}
            </label>
          ))}
          <FieldError id="r-result" message={err('condition.result')} />
        </fieldset>
      </fieldset>

      <fieldset class="rule-part">
        <legend>
          <label class="check">
            <input
              type="checkbox"
              checked={d.timeOn}
              onChange={(e) => set({ timeOn: e.currentTarget.checked })}
            />{' '}
            Only at certain times
          </label>
        </legend>
        {d.timeOn && (
          <>
            <div class="audit-field rule-field">
              <label for="r-when">Events that happen</label>
              <select
                id="r-when"
                value={d.when}
                onChange={(e) => set({ when: e.currentTarget.value as RuleDraft['when'] })}
              >
                <option value="outside">outside these times</option>
                <option value="inside">inside these times</option>
              </select>
            </div>
            <fieldset class="rule-checks" {...described('r-days', err('condition.time'))}>
              <legend>Days</legend>
              {DAYS.map((day) => (
                <label key={day} class="check">
                  <input
                    type="checkbox"
                    checked={d.days.includes(day)}
                    onChange={(e) =>
                      set({
                        days: e.currentTarget.checked ? [...d.days, day] : d.days.filter((x) => x !== day),
                      })
                    }
                  />{' '}
                  {DAY_NAMES[day]}
                </label>
              ))}
              <FieldError id="r-days" message={err('condition.time.days') ?? err('condition.time')} />
            </fieldset>
            <div class="rule-grid">
              <div class="audit-field rule-field">
                <label for="r-from">From (empty: start of day)</label>
                <input
                  id="r-from"
                  type="time"
                  value={d.from}
                  onInput={(e) => set({ from: e.currentTarget.value })}
                  {...described('r-from', err('condition.time.from'))}
                />
                <FieldError id="r-from" message={err('condition.time.from')} />
              </div>
              <div class="audit-field rule-field">
                <label for="r-to">Until (empty: end of day)</label>
                <input
                  id="r-to"
                  type="time"
                  value={d.to}
                  onInput={(e) => set({ to: e.currentTarget.value })}
                  {...described('r-to', err('condition.time.to'))}
                />
                <FieldError id="r-to" message={err('condition.time.to')} />
              </div>
              <div class="audit-field rule-field">
                <label for="r-zone">Time zone</label>
                <select
                  id="r-zone"
                  value={d.timeZone}
                  onChange={(e) => set({ timeZone: e.currentTarget.value })}
                >
                  <option value="">The hub’s ({hubTimeZone ?? 'ALERT_TIME_ZONE'})</option>
                  {zones.map((z) => (
                    <option key={z} value={z}>
                      {z}
                    </option>
                  ))}
                </select>
                <FieldError id="r-zone" message={err('condition.time.time_zone')} />
              </div>
            </div>
          </>
        )}
      </fieldset>

      <fieldset class="rule-part">
        <legend>
          <label class="check">
            <input
              type="checkbox"
              checked={d.thresholdOn}
              onChange={(e) => set({ thresholdOn: e.currentTarget.checked })}
            />{' '}
            Only after several events
          </label>
        </legend>
        {!d.thresholdOn && (
          <p class="muted small">Without: every matching event fires, at most one alert an hour per actor.</p>
        )}
        {d.thresholdOn && (
          <div class="rule-grid">
            <div class="audit-field rule-field">
              <label for="r-count">At least this many events</label>
              <input
                id="r-count"
                type="number"
                inputMode="numeric"
                min={1}
                max={LIMITS.count}
                step={1}
                value={d.count}
                onInput={(e) => set({ count: e.currentTarget.value })}
                {...described('r-count', err('condition.threshold.count'))}
              />
              <FieldError id="r-count" message={err('condition.threshold.count')} />
            </div>
            <div class="audit-field rule-field">
              <label for="r-window">Within</label>
              <span class="rule-window">
                <input
                  id="r-window"
                  type="number"
                  inputMode="numeric"
                  min={1}
                  step={1}
                  value={d.windowValue}
                  onInput={(e) => set({ windowValue: e.currentTarget.value })}
                  {...described('r-window', err('condition.threshold.window'))}
                />
                <select
                  aria-label="Unit of the window"
                  value={d.windowUnit}
                  onChange={(e) => set({ windowUnit: e.currentTarget.value as WindowUnit })}
                >
                  {(Object.keys(WINDOW_UNITS) as WindowUnit[]).map((u) => (
                    <option key={u} value={u}>
                      {UNIT_WORDS[u]}
                    </option>
                  ))}
                </select>
              </span>
              <FieldError id="r-window" message={err('condition.threshold.window')} />
            </div>
            <div class="audit-field rule-field">
              <label for="r-per">Counted</label>
              <select
                id="r-per"
                value={d.per}
                onChange={(e) => set({ per: e.currentTarget.value as RuleDraft['per'] })}
              >
                <option value="actor">per actor</option>
                <option value="overall">over all actors</option>
              </select>
            </div>
          </div>
        )}
      </fieldset>

      {unmapped && (
        <p class="form-error" role="alert">
          {auditWords(serverError)}
        </p>
      )}
      <div class="dialog-buttons">
        <button type="submit" class="button" disabled={sending}>
          {sending ? 'Saving…' : ruleId ? 'Save changes' : 'Create rule'}
        </button>
        <button type="button" class="button button-secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function FieldError({ id, message }: { id: string; message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="form-error" id={`${id}-error`}>
      {message}
    </p>
  );
}

function TextMatch({
  id,
  label,
  value,
  onChange,
  error,
}: {
  id: string;
  label: string;
  value: TextMatchDraft;
  onChange: (value: TextMatchDraft) => void;
  error: string | undefined;
}) {
  return (
    <div class="rule-text-match">
      <label for={`${id}-mode`} class="visually-hidden">
        How {label.toLowerCase()} matches
      </label>
      <select
        id={`${id}-mode`}
        value={value.mode}
        onChange={(e) => onChange({ ...value, mode: e.currentTarget.value as TextMatchDraft['mode'] })}
      >
        <option value="contains">{label} contains</option>
        <option value="equals">{label} is</option>
      </select>
      <TagInput
        id={id}
        label={`${label} (any of; none: any)`}
        tags={value.values}
        suggestions={[]}
        onChange={(values) => onChange({ ...value, values })}
        error={error}
        placeholder="type a value, Enter to add"
        maxLength={LIMITS.text}
        max={LIMITS.values}
      />
    </div>
  );
}
